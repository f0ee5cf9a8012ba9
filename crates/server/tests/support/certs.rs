//! A CA and a server certificate for 127.0.0.1 and the name `tickertape.test` signed by
//! it, made with the `openssl` CLI (as crates/mongodb/tests/security.rs makes MongoDB's),
//! for the TLS tests of the server and of the CLI (which includes this file by path).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `ca.pem`, `cert.pem` and `key.pem` in a temporary directory, removed on drop.
pub struct Certificates {
    dir: tempfile::TempDir,
}

impl Certificates {
    pub fn make() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        // rustls refuses a CA certificate as a server's own (CaUsedAsEndEntity), so the
        // server gets a leaf certificate with CA:FALSE and the address in subjectAltName.
        std::fs::write(
            dir.path().join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1,DNS:tickertape.test\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .expect("write ext.cnf");
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        let steps = [
            format!("req -x509 -new {ec} -keyout ca.key -out ca.pem -days 2 -subj /CN=tt-test-CA"),
            format!("req -new {ec} -keyout key.pem -out server.csr -subj /CN=127.0.0.1"),
            "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -set_serial 2 -days 2 \
             -extfile ext.cnf -out cert.pem"
                .to_string(),
        ];
        for step in steps {
            let args: Vec<&str> = step.split_whitespace().collect();
            let output = Command::new("openssl")
                .args(&args)
                .current_dir(dir.path())
                .output()
                .unwrap_or_else(|e| panic!("the TLS tests make certificates with openssl: {e}"));
            assert!(
                output.status.success(),
                "openssl {step}: {}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Self { dir }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    pub fn key(&self) -> PathBuf {
        self.dir.path().join("key.pem")
    }
}
