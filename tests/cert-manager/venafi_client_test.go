// cert-manager's Venafi issuer client (github.com/cert-manager/cert-manager/pkg/issuer/venafi/client),
// unchanged, against a live Strongroom: the calls its controller makes for an
// Issuer with `spec.venafi.tpp` (Ping, then per CertificateRequest
// RequestCertificate and RetrieveCertificate), the chain parsed as the
// controller parses it (utilpki.ParseSingleCertificateChainPEM).
//
// No cluster: the Secret holding the credentials is served by cert-manager's
// own FakeSecretLister (test/unit/listers), which fits the client's
// SecretLister parameter without importing cert-manager's internal packages.
//
// Run by scripts/certificates, which starts the server and sets:
//
//	STRONGROOM_CM_URL        the Issuer's spec.venafi.tpp.url (https://127.0.0.1:PORT/vedsdk)
//	STRONGROOM_CM_TLS_CA     PEM file: the server's TLS certificate (spec.venafi.tpp.caBundle)
//	STRONGROOM_CM_ISSUING_CA PEM file: the certificate of the CA that signs (the chain must end in it)
//	STRONGROOM_CM_ZONE       spec.venafi.zone, e.g. apps
//	STRONGROOM_CM_RESTRICTED_ZONE a zone whose locked policy allows only example.org
//	STRONGROOM_CM_USERNAME, STRONGROOM_CM_PASSWORD, STRONGROOM_CM_CLIENT_ID
//	                         the Secret's username, password and client-id
//	STRONGROOM_CM_ACCESS_TOKEN (optional) the Secret's access-token, for the token variant
//
// Without STRONGROOM_CM_URL the test skips, and fails under
// STRONGROOM_REQUIRE_ALL_TESTS=1.
package certmanager_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/cert-manager/cert-manager/pkg/issuer/venafi/client"
	"github.com/cert-manager/cert-manager/pkg/metrics"
	utilpki "github.com/cert-manager/cert-manager/pkg/util/pki"
	"github.com/cert-manager/cert-manager/test/unit/listers"
)

const namespace = "strongroom-test"

type config struct {
	url, zone                         string
	tlsCA, issuingCA                  []byte
	username, password, clientID, tok string
}

func load(t *testing.T) config {
	t.Helper()
	url := os.Getenv("STRONGROOM_CM_URL")
	if url == "" {
		if os.Getenv("STRONGROOM_REQUIRE_ALL_TESTS") == "1" {
			t.Fatal("STRONGROOM_CM_URL is not set (run by scripts/certificates) and STRONGROOM_REQUIRE_ALL_TESTS=1")
		}
		t.Skip("!!! SKIPPED: STRONGROOM_CM_URL is not set; scripts/certificates runs this test against a live server")
	}
	read := func(name string) []byte {
		path := os.Getenv(name)
		if path == "" {
			t.Fatalf("%s is not set", name)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return b
	}
	return config{
		url:       url,
		zone:      os.Getenv("STRONGROOM_CM_ZONE"),
		tlsCA:     read("STRONGROOM_CM_TLS_CA"),
		issuingCA: read("STRONGROOM_CM_ISSUING_CA"),
		username:  os.Getenv("STRONGROOM_CM_USERNAME"),
		password:  os.Getenv("STRONGROOM_CM_PASSWORD"),
		clientID:  os.Getenv("STRONGROOM_CM_CLIENT_ID"),
		tok:       os.Getenv("STRONGROOM_CM_ACCESS_TOKEN"),
	}
}

// newClient builds the client as cert-manager's Venafi issuer does: an Issuer
// resource, the Secret it names (through the lister), a real metrics
// registry (a nil one panics in the instrumented connector).
func newClient(t *testing.T, c config, secret map[string][]byte) client.Interface {
	t.Helper()
	iss := &cmapi.Issuer{
		ObjectMeta: metav1.ObjectMeta{Name: "strongroom", Namespace: namespace},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{Venafi: &cmapi.VenafiIssuer{
			Zone: c.zone,
			TPP: &cmapi.VenafiTPP{
				URL:            c.url,
				CredentialsRef: cmmeta.LocalObjectReference{Name: "strongroom-credentials"},
				CABundle:       c.tlsCA,
			},
		}}},
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "strongroom-credentials", Namespace: namespace},
		Data:       secret,
	}
	lister := listers.NewFakeSecretLister(listers.SetFakeSecretNamespaceListerGet(sec, nil))
	m := metrics.New(logr.Discard(), clock.RealClock{})
	v, err := client.New(namespace, lister, iss, m, logr.Discard(), "cert-manager/strongroom-test")
	if err != nil {
		t.Fatalf("client.New (authentication): %v", err)
	}
	return v
}

func csrFor(t *testing.T, key crypto.Signer, cn string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: cn},
		DNSNames: []string{cn},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func parsePEMCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("no PEM block in %q", b)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// issue runs what the controller runs for one CertificateRequest and checks
// the result; it returns the leaf.
func issue(t *testing.T, c config, v client.Interface, key crypto.Signer, cn string) *x509.Certificate {
	t.Helper()
	const duration = 2160 * time.Hour
	csr := csrFor(t, key, cn)
	start := time.Now()
	pickupID, err := v.RequestCertificate(csr, duration, nil)
	if err != nil {
		t.Fatalf("FAIL RequestCertificate: %v", err)
	}
	t.Logf("PASS RequestCertificate: pickup ID %s", pickupID)
	if want := `\VED\Policy\` + c.zone + `\` + cn; pickupID != want {
		t.Errorf("FAIL the pickup ID is %q, want %q (PolicyDN\\ObjectName, ObjectName = the CN)", pickupID, want)
	}
	chain, err := v.RetrieveCertificate(pickupID, csr, duration, nil)
	if err != nil {
		t.Fatalf("FAIL RetrieveCertificate: %v", err)
	}
	bundle, err := utilpki.ParseSingleCertificateChainPEM(chain)
	if err != nil {
		t.Fatalf("FAIL ParseSingleCertificateChainPEM: %v\n%s", err, chain)
	}
	t.Logf("PASS RetrieveCertificate + ParseSingleCertificateChainPEM (%d bytes of chain, %d of CA)", len(bundle.ChainPEM), len(bundle.CAPEM))
	leaf := parsePEMCert(t, bundle.ChainPEM)
	issuing := parsePEMCert(t, c.issuingCA)

	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		t.Errorf("FAIL the certificate's key is not the CSR's")
	}
	if leaf.Subject.CommonName != cn || len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != cn {
		t.Errorf("FAIL subject %q, DNS SANs %v; want CN and one DNS SAN %q", leaf.Subject.CommonName, leaf.DNSNames, cn)
	}
	// The requested duration travels as "Specific End Date"; a CA may
	// shorten it, never lengthen it.
	if leaf.NotAfter.After(start.Add(duration + 5*time.Minute)) {
		t.Errorf("FAIL NotAfter %s is past the requested 2160 h", leaf.NotAfter)
	}
	if leaf.NotAfter.Before(start.Add(24 * time.Hour)) {
		t.Errorf("FAIL NotAfter %s is less than a day away", leaf.NotAfter)
	}
	if len(bundle.CAPEM) == 0 {
		t.Errorf("FAIL the chain has no CA certificate (IncludeChain was asked)")
	} else if ca := parsePEMCert(t, bundle.CAPEM); !bytes.Equal(ca.Raw, issuing.Raw) {
		t.Errorf("FAIL the chain's CA is %q, not the issuing CA %q", ca.Subject, issuing.Subject)
	}
	roots := x509.NewCertPool()
	roots.AddCert(issuing)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: cn, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("FAIL the leaf does not verify against the issuing CA for %s: %v", cn, err)
	}
	return leaf
}

func randomName(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s-%s.example.com", prefix, hex.EncodeToString(b))
}

// With a username and password (the Secret's username, password, client-id):
// the password grant for scope certificate:manage, Identity/Self, Ping, then
// two CertificateRequests for one name (cert-manager's renewal: Reset, then a
// new Request on the same DN), one RSA and one P-256 key.
func TestCertManagerVenafiClientPassword(t *testing.T) {
	c := load(t)
	secret := map[string][]byte{"username": []byte(c.username), "password": []byte(c.password)}
	if c.clientID != "" {
		secret["client-id"] = []byte(c.clientID)
	}
	v := newClient(t, c, secret)
	if err := v.Ping(); err != nil {
		t.Fatalf("FAIL Ping: %v", err)
	}
	t.Log("PASS Ping")
	if _, err := v.ReadZoneConfiguration(); err != nil {
		t.Fatalf("FAIL ReadZoneConfiguration: %v", err)
	}
	t.Log("PASS ReadZoneConfiguration")

	cn := randomName(t, "cm")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	first := issue(t, c, v, rsaKey, cn)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	second := issue(t, c, v, ecKey, cn)
	if first.SerialNumber.Cmp(second.SerialNumber) == 0 {
		t.Errorf("FAIL the second request for %s returned the first certificate (serial %x)", cn, first.SerialNumber)
	} else {
		t.Logf("PASS a second request on the same DN: a new certificate (serial %x, then %x)", first.SerialNumber, second.SerialNumber)
	}
}

// With an access token (the Secret's access-token): Authorize/Verify, then one
// CertificateRequest.
func TestCertManagerVenafiClientAccessToken(t *testing.T) {
	c := load(t)
	if c.tok == "" {
		t.Skip("STRONGROOM_CM_ACCESS_TOKEN is not set")
	}
	v := newClient(t, c, map[string][]byte{"access-token": []byte(c.tok)})
	if err := v.Ping(); err != nil {
		t.Fatalf("FAIL Ping: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issue(t, c, v, key, strings.ToLower(randomName(t, "cm-token")))
}

// A folder whose policy allows only example.org (STRONGROOM_CM_RESTRICTED_ZONE):
// a CSR for example.com is refused (by vcert's check of the CheckPolicy
// answer before anything is sent, or by the server) and issues nothing; one
// for a name under example.org is issued.
func TestCertManagerVenafiClientPolicy(t *testing.T) {
	c := load(t)
	c.zone = os.Getenv("STRONGROOM_CM_RESTRICTED_ZONE")
	if c.zone == "" {
		t.Fatal("STRONGROOM_CM_RESTRICTED_ZONE is not set")
	}
	v := newClient(t, c, map[string][]byte{"username": []byte(c.username), "password": []byte(c.password)})
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	outside := randomName(t, "cm-outside")
	if id, err := v.RequestCertificate(csrFor(t, key, outside), 2160*time.Hour, nil); err == nil {
		t.Errorf("FAIL a CSR for %s was accepted in a folder that allows only example.org (pickup ID %s)", outside, id)
	} else {
		t.Logf("PASS a CSR outside the whitelisted domains is refused: %v", err)
	}
	inside := strings.TrimSuffix(randomName(t, "cm-inside"), ".example.com") + ".example.org"
	issue(t, c, v, key, inside)
}
