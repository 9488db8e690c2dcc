#!/bin/sh
# make_test_certs.sh DIR — a throw-away PKI for the TLS tests (test_grpc_security,
# test_serve, test_python): a CA, a server certificate for localhost and
# 127.0.0.1 (both as subjectAltNames, which is what gRPC checks), and a
# client certificate, all signed by the CA; plus a second, unrelated CA that
# signed nothing here. EC P-256 keys, valid for one day, written as PEM:
#   DIR/ca.pem DIR/server.pem DIR/server.key DIR/client.pem DIR/client.key DIR/other-ca.pem
# Needs the openssl command (Debian: openssl). Exits non-zero on any failure.
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { # name subject
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 1 -out "$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}
leaf() { # name subject extensions
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  printf '%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile "$1.ext" \
    -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
ca ca "featstore test CA"
ca other-ca "another CA"
leaf server localhost "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
leaf client "featstore test trainer" "extendedKeyUsage=clientAuth"
chmod 600 ./*.key
