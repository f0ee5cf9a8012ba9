use super::*;

#[test]
fn hash_matches_mongodb() {
    // MongoDB's jstest of `_hashBSONElement` (seed 1): 0, 2^63 - 1 (what 2^63 + 2^11
    // clamps to), -2^63, 2^63 - 2^10; and seed 0, the hashed index's, of 1.
    assert_eq!(mongo_hash_i64_seeded(0, 1), 5574369198691456941);
    assert_eq!(mongo_hash_i64_seeded(i64::MAX, 1), 1136124329541638701);
    assert_eq!(mongo_hash_i64_seeded(i64::MIN, 1), 5744114172487291558);
    assert_eq!(
        mongo_hash_i64_seeded(i64::MAX - 1023, 1),
        -3954856262017896439
    );
    assert_eq!(mongo_hash_i64(1), 5902408780260971510);
}

fn series_of(n: i64) -> Vec<Series> {
    (1..=n)
        .map(|id| Series {
            hash: mongo_hash_i64(id),
            from: 0,
            until: u64::MAX,
        })
        .collect()
}

fn collection(series: &[Series], chunks: usize, shards: usize) -> Collection {
    let mut c = Collection::presplit("sv.1.0".into(), 0, 100, chunks, shards);
    c.members = series
        .iter()
        .enumerate()
        .map(|(i, s)| (s.hash, i))
        .collect();
    c.members.sort_unstable();
    c.recount(series, 0);
    c
}

#[test]
fn hashed_ids_in_order_spread_over_presplit_chunks() {
    let series = series_of(32_000);
    let c = collection(&series, 32, 16);
    assert_eq!(c.chunks[0].lo, i64::MIN as i128);
    assert_eq!(c.chunks[31].hi, i64::MAX as i128 + 1);
    assert_eq!(c.chunks.iter().filter(|k| k.shard == 3).count(), 2);
    for k in &c.chunks {
        // 1,000 expected each: a few percent either way, never a hot chunk.
        assert!((900..1100).contains(&k.alive), "{k:?}");
    }
    // The first 16 ids alone land on several shards.
    let shards: BTreeSet<usize> = series[..16]
        .iter()
        .map(|s| c.chunk_of(s.hash).shard)
        .collect();
    assert!(shards.len() >= 8, "{shards:?}");
}

#[test]
fn an_oversized_chunk_splits_in_two_halves_on_its_shard() {
    let series = series_of(1_000);
    let mut c = collection(&series, 1, 1);
    c.chunks[0].bytes = 1_000 * 5 * 10;
    let splits = c.split_oversized(&series, 4, 10, 40_000);
    assert_eq!(splits, 1);
    assert_eq!(c.chunks.len(), 2);
    assert_eq!(c.chunks[0].hi, c.chunks[1].lo);
    assert_eq!(c.chunks[0].bytes + c.chunks[1].bytes, 50_000);
    assert_eq!(c.chunks[0].bytes, 25_000);
    assert_eq!(c.chunks[0].alive + c.chunks[1].alive, 1_000);
    assert!(c.chunks.iter().all(|k| k.shard == 0));
    // Every series is still found in exactly the chunk that holds its hash.
    for s in &series {
        let k = c.chunk_of(s.hash);
        assert!(k.lo <= s.hash as i128 && (s.hash as i128) < k.hi);
    }
}

#[test]
fn a_one_series_chunk_is_jumbo() {
    let series = series_of(1);
    let mut c = collection(&series, 1, 1);
    c.chunks[0].bytes = 100;
    assert_eq!(c.split_oversized(&series, 10, 10, 50), 0);
    assert!(c.chunks[0].jumbo);
}

#[test]
fn the_balancer_moves_one_chunk_per_shard_past_the_threshold() {
    let series = series_of(100);
    let mut a = collection(&series, 4, 1);
    let mut b = collection(&series, 4, 1);
    for k in &mut a.chunks {
        k.bytes = 100;
    }
    for k in &mut b.chunks {
        k.bytes = 100;
    }
    let mut colls = vec![a, b];
    // Shard 0 holds 400 per collection, shards 1 and 2 none: one move each round, and
    // a shard takes part in one move per round (the second collection waits: only shard 2
    // is free, and it has nothing to give).
    assert_eq!(balancer_round(&mut colls, 3, 150), 1);
    assert_eq!(colls[0].bytes_by_shard(3), vec![300, 100, 0]);
    assert_eq!(colls[1].bytes_by_shard(3), vec![400, 0, 0]);
    // Under the threshold nothing moves.
    assert_eq!(balancer_round(&mut colls, 3, 1_000), 0);
    let mut rounds = 0;
    while balancer_round(&mut colls, 3, 150) > 0 {
        rounds += 1;
    }
    assert!(rounds < 10);
    for c in &colls {
        let b = c.bytes_by_shard(3);
        assert!(
            b.iter().max().unwrap() - b.iter().min().unwrap() <= 150,
            "{b:?}"
        );
    }
}
