package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
)

// PKI is a throwaway certificate authority with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files.
type PKI struct {
	CAFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile string
	// ClientTLS is a client configuration that trusts the CA and presents the client
	// certificate.
	ClientTLS *tls.Config
}

// NewPKI makes a PKI in a temporary directory.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := newCert(t, nil, nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "redistest CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	})
	p := &PKI{
		CAFile:         filepath.Join(dir, "ca.pem"),
		ServerCertFile: filepath.Join(dir, "server.pem"),
		ServerKeyFile:  filepath.Join(dir, "server-key.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"),
		ClientKeyFile:  filepath.Join(dir, "client-key.pem"),
	}
	writePEM(t, p.CAFile, "CERTIFICATE", caDER)
	srvKey, _, srvDER := newCert(t, caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	})
	writePEM(t, p.ServerCertFile, "CERTIFICATE", srvDER)
	writeKey(t, p.ServerKeyFile, srvKey)
	cliKey, _, cliDER := newCert(t, caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "redistest client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	})
	writePEM(t, p.ClientCertFile, "CERTIFICATE", cliDER)
	writeKey(t, p.ClientKeyFile, cliKey)

	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	pair, err := tls.LoadX509KeyPair(p.ClientCertFile, p.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	p.ClientTLS = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	return p
}

var serial atomic.Int64

func newCert(t testing.TB, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeKey(t testing.TB, path string, key *ecdsa.PrivateKey) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "PRIVATE KEY", der)
}

// StartTLS runs redis-server accepting only TLS connections with certificates from pki,
// requiring a client certificate.
func StartTLS(t testing.TB, pki *PKI, extra ...string) *Server {
	t.Helper()
	return startTLS(t, pki, extra)
}

func startTLS(t testing.TB, pki *PKI, extra []string) *Server {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		dir := t.TempDir()
		port := freeport.For(t)
		args := []string{"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"),
			"--tls-cert-file", pki.ServerCertFile, "--tls-key-file", pki.ServerKeyFile,
			"--tls-ca-cert-file", pki.CAFile, "--tls-auth-clients", "yes"}
		args = append(args, extra...)
		s := &Server{t: t, port: port, dir: dir, args: args, tlsConfig: pki.ClientTLS}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("starting redis-server with TLS: %v", lastErr)
	return nil
}
