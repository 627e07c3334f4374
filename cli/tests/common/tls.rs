//! A test CA and a server certificate it signed, made by `openssl`: what
//! the tests of HTTPS serving trust.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Files of a test CA and of a server certificate it signed for
/// `localhost`, `gateway.test` and `127.0.0.1`, made by `openssl` in
/// `dir`.
pub(crate) struct Certs {
    pub(crate) ca: PathBuf,
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl runs (it makes the test's certificates)");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

pub(crate) fn certs(dir: &Path) -> Certs {
    std::fs::write(
        dir.join("ca.ext"),
        "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("server.ext"),
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,DNS:gateway.test,IP:127.0.0.1\n",
    )
    .unwrap();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
    openssl(
        dir,
        &[
            &["req", "-new", "-nodes"][..],
            &ec,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.csr",
                "-subj",
                "/CN=toolgate test CA",
            ],
        ]
        .concat(),
    );
    openssl(
        dir,
        &[
            "x509", "-req", "-in", "ca.csr", "-signkey", "ca.key", "-out", "ca.pem", "-days", "2",
            "-extfile", "ca.ext",
        ],
    );
    openssl(
        dir,
        &[
            &["req", "-new", "-nodes"][..],
            &ec,
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        ]
        .concat(),
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
    Certs {
        ca: dir.join("ca.pem"),
        cert: dir.join("server.pem"),
        key: dir.join("server.key"),
    }
}
