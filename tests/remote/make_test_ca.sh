#!/usr/bin/env bash
# make_test_ca.sh DIR — a test CA and a server certificate it signed, for HTTPS tests on 127.0.0.1 (issue 28).
#
# Writes DIR/ca.pem (the CA's certificate: what a client is configured with, remote ca_file), DIR/ca.key,
# DIR/server.pem + DIR/server.key (CN localhost, subjectAltName DNS:localhost, IP:127.0.0.1, IP:::1; serverAuth),
# all with openssl (Debian's openssl package). EC P-256 keys (fast to make), valid 2 days: made per test run, never
# kept. Nothing here is trusted by the system: a client without ca.pem refuses the server, which the tests check.
set -euo pipefail
dir=${1:?usage: make_test_ca.sh DIR}
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=batchd test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
  -keyout server.key -out server.csr 2>/dev/null
cat >server.ext <<'EOF'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
EOF
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
  -out server.pem 2>/dev/null
rm -f server.csr server.ext ca.srl
chmod 600 ca.key server.key
