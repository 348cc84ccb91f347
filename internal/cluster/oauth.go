package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// tokenTimeout bounds one request to the token endpoint, so a broker
// connection never waits on an identity provider that does not answer.
const tokenTimeout = 10 * time.Second

// TokenError is a token endpoint's refusal or failure, in words a user can
// act on. The connectivity check shows it in its sasl step.
type TokenError struct {
	Endpoint string
	Err      error
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("OAuth token endpoint %s: %v", e.Endpoint, e.Err)
}

func (e *TokenError) Unwrap() error { return e.Err }

// tokenProvider gives sarama OAUTHBEARER tokens from the client-credentials
// grant. oauth2's ReuseTokenSource caches a token and fetches a new one
// shortly before it expires, so each broker connection (and each
// re-authentication, KIP-368, which sarama does when the broker sets a
// session lifetime) gets a live token without asking the endpoint every time.
type tokenProvider struct {
	endpoint string
	src      oauth2.TokenSource
}

func (s Settings) tokenProvider() (*tokenProvider, error) {
	o := s.OAuth
	if o.TokenEndpoint == "" || o.ClientID == "" {
		return nil, errors.New("OAUTHBEARER needs oauth.token_endpoint and oauth.client_id")
	}
	hc, err := s.tokenHTTPClient()
	if err != nil {
		return nil, err
	}
	cc := clientcredentials.Config{
		ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenEndpoint,
		// Credentials in the form body work with every provider; basic auth
		// with a secret holding ':' or '%' is not decoded alike by all.
		AuthStyle: oauth2.AuthStyleInParams,
	}
	if o.Scope != "" {
		cc.Scopes = strings.Fields(o.Scope)
	}
	if o.Audience != "" {
		cc.EndpointParams = url.Values{"audience": {o.Audience}}
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	return &tokenProvider{endpoint: o.TokenEndpoint, src: cc.TokenSource(ctx)}, nil
}

// tokenHTTPClient trusts the system roots plus the cluster's CA (a private
// CA often signs the identity provider too), never follows a redirect
// (a client secret is never re-sent elsewhere) and bounds each request.
func (s Settings) tokenHTTPClient() (*http.Client, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if strings.TrimSpace(s.CAPEM) != "" && !pool.AppendCertsFromPEM([]byte(s.CAPEM)) {
		return nil, errors.New("ca_pem holds no PEM certificate")
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
		TLSHandshakeTimeout: 5 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: tokenTimeout,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("the token endpoint redirects to %s: give the final token URL", req.URL.Redacted())
		}}, nil
}

// Token implements sarama.AccessTokenProvider.
func (p *tokenProvider) Token() (*sarama.AccessToken, error) {
	t, err := p.src.Token()
	if err != nil {
		return nil, &TokenError{Endpoint: p.endpoint, Err: explainTokenError(err)}
	}
	return &sarama.AccessToken{Token: t.AccessToken}, nil
}

// FetchToken asks the token endpoint for a token once, for the connectivity
// check: it returns when the token expires, or a *TokenError.
func (s Settings) FetchToken(ctx context.Context) (time.Time, error) {
	p, err := s.tokenProvider()
	if err != nil {
		return time.Time{}, err
	}
	type result struct {
		t   *oauth2.Token
		err error
	}
	ch := make(chan result, 1)
	go func() { t, err := p.src.Token(); ch <- result{t, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			return time.Time{}, &TokenError{Endpoint: p.endpoint, Err: explainTokenError(r.err)}
		}
		return r.t.Expiry, nil
	case <-ctx.Done():
		return time.Time{}, &TokenError{Endpoint: p.endpoint, Err: fmt.Errorf("no answer in time: %w", ctx.Err())}
	}
}

// explainTokenError turns oauth2's errors into what the endpoint said
// (RFC 6749 5.2: error and error_description), never echoing the request.
func explainTokenError(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		var ue *url.Error
		if errors.As(err, &ue) {
			return fmt.Errorf("cannot be reached (%v): check oauth.token_endpoint and that kmirror can reach it", ue.Err)
		}
		return err
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	code, desc := re.ErrorCode, re.ErrorDescription
	if code == "" {
		var body struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if json.Unmarshal(re.Body, &body) == nil {
			code, desc = body.Error, body.Description
		}
	}
	hint := "check oauth.client_id and oauth.client_secret"
	switch code {
	case "invalid_scope":
		hint = "check oauth.scope"
	case "invalid_target", "invalid_audience":
		hint = "check oauth.audience"
	case "":
		if status == http.StatusNotFound {
			hint = "check oauth.token_endpoint: nothing answers at that path"
		}
	}
	said := code
	if desc != "" {
		said = strings.TrimSpace(code + " (" + desc + ")")
	}
	if said == "" {
		return fmt.Errorf("refused the client-credentials grant with HTTP %d: %s", status, hint)
	}
	if len(said) > 300 {
		said = said[:300] + "..."
	}
	return fmt.Errorf("refused the client-credentials grant with HTTP %d, %s: %s", status, said, hint)
}
