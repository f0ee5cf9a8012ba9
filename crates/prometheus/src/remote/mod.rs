//! Remote write and remote read (Prometheus 2.x, protocol 0.1.0): protobuf messages in
//! snappy's block format.
