package consoletest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The security round's pages, walked in a real browser by the roles they
// concern, in both languages: an admin makes a token that expires and
// sees its expiry, owner and last use; sets a destination policy; an
// operator's task by address is then refused by its field, in the
// operator's language. (A copied session cookie is HttpOnly, out of the
// page's reach: web's TestSignOutEndsACopiedCookie copies it.)
func TestAccessPagesByRole(t *testing.T) {
	src := axeSource(t)
	base := startConsole(t)
	apiPost(t, base, "/api/v1/clusters", `{"name":"east","bootstrap_servers":["127.0.0.1:1"]}`)
	apiPost(t, base, "/api/v1/users", `{"name":"otto","role":"operator","password":"otto-password"}`)
	b := newBrowser(t, base)

	for _, lang := range []string{"en", "zh-TW"} {
		b.run("language "+lang, chromedp.Navigate(base+"/lang?to="+lang+"&next=/signin"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)))
		b.signInAs("admin", adminPassword)
		name := "ci-" + strings.ToLower(strings.ReplaceAll(lang, "-", ""))
		b.run("make a token "+lang,
			chromedp.Navigate(base+"/tokens"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="add-token-form"]`)),
			chromedp.SendKeys(chromedp.CSS(`#token_name`), name),
			setSelect(`#role`, "viewer"),
			chromedp.SendKeys(chromedp.CSS(`#token_expires_in`), "720h"),
			chromedp.Click(chromedp.CSS(`[data-testid="add-token-submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="token-created"]`)))
		token := b.text(`[data-testid="token-value"]`)
		row := fmt.Sprintf(`[data-testid="token-row"][data-token=%q]`, name)
		if got := b.text(row + ` [data-testid="token-expires"]`); !strings.Contains(got, time.Now().UTC().Add(720*time.Hour).Format("2006-01-02")) {
			t.Errorf("%s: the token's expiry shows %q", lang, got)
		}
		b.axeCheck(src, lang+" tokens page with a new token")
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/clusters", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: the new token: %v %v", lang, resp, err)
		} else {
			resp.Body.Close()
		}
		b.run("tokens again", chromedp.Navigate(base+"/tokens"), chromedp.WaitVisible(chromedp.CSS(row)))
		if got := b.text(row + ` [data-testid="token-last-used"]`); !strings.Contains(got, time.Now().UTC().Format("2006-01-02")) {
			t.Errorf("%s: the token's last use shows %q", lang, got)
		}

		b.run("destination policy "+lang,
			chromedp.Navigate(base+"/destination-policy"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="policy-form"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="policy-mode-registered"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="policy-submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash-success"]`)))
		if !b.evalBool(`document.querySelector('[data-testid="policy-mode-registered"]').checked`) {
			t.Errorf("%s: the saved policy is not shown", lang)
		}
		b.axeCheck(src, lang+" destination policy")
		b.screenshot("destination-policy-" + lang)
		b.signOut("admin")

		b.signInAs("otto", "otto-password")
		b.run("a task by address "+lang,
			chromedp.Navigate(base+"/instances/east/smart-connect/new"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-form"]`)),
			chromedp.SendKeys(chromedp.CSS(`#f-name`), "by-address"),
			chromedp.SendKeys(chromedp.CSS(`#f-current-alias`), "A"),
			chromedp.SendKeys(chromedp.CSS(`#f-peer-alias`), "B"),
			chromedp.SendKeys(chromedp.CSS(`#f-peer-address`), "10.1.2.3:9092"),
			chromedp.SendKeys(chromedp.CSS(`[data-testid="topic-input"]`), "orders"+kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="topic-chip"]`)))
		b.waitFor("form settled", `!document.querySelector(".htmx-request")`, 15*time.Second)
		b.run("create now", chromedp.Click(chromedp.CSS(`[data-testid="create-now"]`)))
		sel := `[data-testid="error-peer.config_type"]`
		b.waitFor("the policy's refusal", fmt.Sprintf(`!!document.querySelector(%s)`, q(sel)), 15*time.Second)
		want := map[string]string{"en": "registered instances only", "zh-TW": "已註冊的實例"}[lang]
		if got := b.text(sel); !strings.Contains(got, want) {
			t.Errorf("%s: the refusal says %q, want it to say %q", lang, got, want)
		}
		b.screenshot("task-refused-by-policy-" + lang)
		b.axeCheck(src, lang+" task form refused by the destination policy")

		b.signOut("operator")
		b.noNewErrors(lang)

		b.signInAs("admin", adminPassword)
		b.run("policy back to any", chromedp.Navigate(base+"/destination-policy"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="policy-form"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="policy-mode-any"]`)), chromedp.Click(chromedp.CSS(`[data-testid="policy-submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash-success"]`)))
		b.signOut("admin")
	}
}
