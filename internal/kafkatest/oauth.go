package kafkatest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// OAuthAudience is the audience every cluster's brokers expect in an
// OAUTHBEARER token (sasl.oauthbearer.expected.audience).
const OAuthAudience = "kafka"

// OAuthClient is an OAuth client the test identity provider knows: its
// tokens name Principal as their subject (so Alice's client is User:alice
// to the brokers' ACLs) and live Lifetime.
type OAuthClient struct {
	ID, Secret string
	Principal  string
	Lifetime   time.Duration
}

// OAuth clients of the identity provider every cluster trusts.
var (
	// AliceOAuth gets hour-long tokens as alice.
	AliceOAuth = OAuthClient{ID: "alice-client", Secret: "alice-client-secret", Principal: "alice", Lifetime: time.Hour}
	// AliceShortOAuth gets one-minute tokens as alice: the brokers make
	// clients re-authenticate when they end (connections.max.reauth.ms).
	AliceShortOAuth = OAuthClient{ID: "alice-short", Secret: "alice-short-secret", Principal: "alice", Lifetime: time.Minute}
)

// IdentityProvider is an OAuth 2 authorization server on loopback, for
// OAUTHBEARER tests: a token endpoint (client-credentials grant) that signs
// RS256 JWTs, and the JWKS the brokers validate them with (Kafka's own
// OAuthBearerValidatorCallbackHandler). One runs per test process, started
// with the first cluster (its brokers need the JWKS address at start), and
// lives as long as the process.
type IdentityProvider struct {
	url     string
	signer  jose.Signer
	jwks    []byte
	clients map[string]OAuthClient
	issued  atomic.Int64
	refused atomic.Int64
	// issuedTo counts the tokens given out per client id, so a test can
	// count its own client's while others run.
	issuedMu sync.Mutex
	issuedTo map[string]int64
}

var (
	idpOnce sync.Once
	idp     *IdentityProvider
	idpErr  error
)

// Identity is the process's identity provider, started on first use.
func Identity() (*IdentityProvider, error) {
	idpOnce.Do(func() { idp, idpErr = startIdentityProvider() })
	return idp, idpErr
}

func rsaKey() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) }

func startIdentityProvider() (*IdentityProvider, error) {
	key, err := rsaKey()
	if err != nil {
		return nil, fmt.Errorf("kafkatest: identity provider key: %w", err)
	}
	const kid = "kafkatest-1"
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("kafkatest: identity provider signer: %w", err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: kid, Algorithm: "RS256", Use: "sig"}}})
	if err != nil {
		return nil, fmt.Errorf("kafkatest: identity provider JWKS: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("kafkatest: identity provider listener: %w", err)
	}
	p := &IdentityProvider{url: "http://" + l.Addr().String(), signer: signer, jwks: jwks, clients: map[string]OAuthClient{}}
	for _, c := range []OAuthClient{AliceOAuth, AliceShortOAuth} {
		p.clients[c.ID] = c
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(p.jwks)
	})
	mux.HandleFunc("POST /token", p.token)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }() // lives with the test process
	return p, nil
}

// TokenURL is the token endpoint (oauth.token_endpoint).
func (p *IdentityProvider) TokenURL() string { return p.url + "/token" }

// JWKSURL is where brokers read the signing keys.
func (p *IdentityProvider) JWKSURL() string { return p.url + "/jwks" }

// Issuer is the iss of every token.
func (p *IdentityProvider) Issuer() string { return p.url }

// Issued counts the tokens given out.
func (p *IdentityProvider) Issued() int64 { return p.issued.Load() }

// IssuedTo counts the tokens given out to one client id.
func (p *IdentityProvider) IssuedTo(id string) int64 {
	p.issuedMu.Lock()
	defer p.issuedMu.Unlock()
	return p.issuedTo[id]
}

// Refused counts the grants refused.
func (p *IdentityProvider) Refused() int64 { return p.refused.Load() }

// token serves the client-credentials grant, with credentials in the form
// body or as basic auth (RFC 6749, 2.3.1).
func (p *IdentityProvider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		p.refuse(w, http.StatusBadRequest, "unsupported_grant_type", "only client_credentials is supported")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	c, known := p.clients[id]
	if !known || c.Secret != secret {
		p.refuse(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	now := time.Now()
	aud := OAuthAudience
	if a := r.PostForm.Get("audience"); a != "" {
		aud = a // as identity providers do: the audience asked for
	}
	claims := jwt.Claims{Subject: c.Principal, Issuer: p.url, Audience: jwt.Audience{aud},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), Expiry: jwt.NewNumericDate(now.Add(c.Lifetime))}
	b := jwt.Signed(p.signer).Claims(claims)
	if scope := r.PostForm.Get("scope"); scope != "" {
		// Kafka's validator refuses an empty scope claim, not a missing one.
		b = b.Claims(map[string]any{"scope": scope})
	}
	tok, err := b.Serialize()
	if err != nil {
		p.refuse(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	p.issued.Add(1)
	p.issuedMu.Lock()
	if p.issuedTo == nil {
		p.issuedTo = map[string]int64{}
	}
	p.issuedTo[id]++
	p.issuedMu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(c.Lifetime.Seconds())})
}

func (p *IdentityProvider) refuse(w http.ResponseWriter, status int, code, desc string) {
	p.refused.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}
