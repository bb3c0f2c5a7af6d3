# shellcheck shell=bash
# Certificates for TLS tests: a CA, a server certificate for the given
# names and addresses, and a client certificate, all in DIR.  Sourced after
# lib.sh:
#
#     . "$TESTS_DIR/tls.sh"
#     tls_certs "$ROWQ_TEST_TMP/tls" localhost 127.0.0.1 10.91.0.1
#     server_start a --ssl-ca=.../ca.pem --ssl-cert=.../server.pem \
#         --ssl-key=.../server-key.pem
#
# Files: ca.pem, ca-key.pem, server.pem, server-key.pem, client.pem,
# client-key.pem, and other-ca.pem (a CA that signed nothing here, for
# tests of a failed verification).  Keys are EC P-256: quick to make.

# tls_certs DIR NAME_OR_ADDRESS...: the first is the certificate's CN; all
# go into its subjectAltName (addresses as IP:, names as DNS:).
tls_certs()
{
	local dir=$1 san="" n
	shift
	mkdir -p "$dir"
	for n in "$@"; do
		if [[ $n =~ ^[0-9.]+$ || $n == *:* ]]; then
			san+="${san:+,}IP:$n"
		else
			san+="${san:+,}DNS:$n"
		fi
	done
	(
		cd "$dir"
		_tls_ca ca "rowq test CA"
		_tls_ca other-ca "rowq other CA"
		_tls_leaf server "$1" "subjectAltName=$san"
		_tls_leaf client "rowq test client" "extendedKeyUsage=clientAuth"
	) >"$dir/openssl.log" 2>&1 || {
		cat "$dir/openssl.log" >&2
		fail "could not make test certificates in $dir"
	}
}

_tls_ca()
{
	openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
	    -keyout "$1-key.pem" -out "$1.pem" -days 2 -subj "/CN=$2"
}

_tls_leaf()
{
	openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
	    -keyout "$1-key.pem" -out "$1.csr" -subj "/CN=$2"
	openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem \
	    -CAcreateserial -out "$1.pem" -days 2 -extfile <(echo "$3")
}
