package i18n

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func zhCtx() context.Context {
	return WithLocalizer(context.Background(), Default().Localizer("zh-TW", ""))
}

// TestServiceFormats: every translation loads, and a message made from
// its English format comes back translated with every argument in it.
func TestServiceFormats(t *testing.T) {
	c, err := loadFormats("zh-TW")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := serviceFiles.ReadFile("service/zh-TW.json")
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for from := range m {
		_, verbs, _ := compileFormat(from)
		args := make([]any, len(verbs))
		for i, v := range verbs {
			if v == 'd' {
				args[i] = 1000 + i
			} else {
				args[i] = fmt.Sprintf("arg%d", i)
			}
		}
		msg := fmt.Sprintf(from, args...)
		got := c.translate(msg, 0)
		if got == msg {
			t.Errorf("%q: not translated", msg)
			continue
		}
		for _, a := range args {
			if !strings.Contains(got, fmt.Sprint(a)) {
				t.Errorf("%q: translation %q lost argument %v", from, got, a)
			}
		}
	}
	if len(c.entries)+len(c.exact) != len(m) {
		t.Errorf("%d formats loaded of %d", len(c.entries)+len(c.exact), len(m))
	}
}

func TestMsg(t *testing.T) {
	zh := zhCtx()
	for _, c := range []struct{ in, want string }{
		{"name is required", "任務名稱為必填項"},
		{`topic "a.b" is listed twice`, `Topic "a.b"重復`},
		{"tasks must be at least 1 (the default is 2)", "任務數至少為1（默認值為2）"},
		// An argument that is itself a message is translated too.
		{"current alias is required", "當前Kafka別名為必填項"},
		{"peer: PLAINTEXT does not authenticate with a password: choose SASL_PLAINTEXT or SASL_SSL, or clear the password", "對端：PLAINTEXT不以密碼認證：請選擇SASL_PLAINTEXT或SASL_SSL，或清空密碼"},
		{"peer: the private key does not belong to the client certificate (the first certificate of the chain): paste the key the certificate was issued for", "對端：私鑰與客戶端證書（證書鏈中的第一個證書）不匹配：請粘貼該證書簽發時所用的私鑰"},
		// Arguments in another order than in English.
		{"replication factor 3 is more than the 1 broker(s) of west, where this task creates topics: use at most 1", "副本數3大於west的Broker數1（本任務在其上創建Topic）：最多使用1"},
		{"your role (viewer) does not allow this; it needs operator: ask an admin", "您的角色（viewer）不允許此操作，需要operator：請聯繫管理員"},
		{`"root" is the last admin: make another admin first`, `"root"是最後一個管理員：請先將另一位用戶設為管理員`},
		{"something the catalogue does not have", "something the catalogue does not have"},
	} {
		if got := Msg(zh, c.in); got != c.want {
			t.Errorf("Msg(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Msg(context.Background(), "name is required"); got != "name is required" {
		t.Errorf("English: %q", got)
	}
}

// problemFormat finds the validation problems the service makes:
// p.Add("field", "format", ...) and p.Add(field, "format", ...).
var problemFormat = regexp.MustCompile(`\.Add\(\s*(?:"[^"]*"|[\w.]+)\s*,\s*("(?:[^"\\]|\\.)*")`)

// TestEveryServiceProblemIsTranslated: a validation problem added to the
// service without a zh-TW translation fails here, not on a page.
func TestEveryServiceProblemIsTranslated(t *testing.T) {
	c, err := loadFormats("zh-TW")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("..", "service", "*.go"))
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range problemFormat.FindAllStringSubmatch(string(b), -1) {
			var format string
			if err := json.Unmarshal([]byte(m[1]), &format); err != nil {
				t.Fatal(err)
			}
			if format == "%s" {
				continue // a message made elsewhere, checked there
			}
			found++
			_, inExact := c.exact[format]
			inEntries := false
			for _, e := range c.entries {
				re, _, _ := compileFormat(format)
				if e.re.String() == re.String() {
					inEntries = true
				}
			}
			if !inExact && !inEntries {
				t.Errorf("%s: %q has no zh-TW translation: add it to internal/i18n/service/zh-TW.json", filepath.Base(f), format)
			}
		}
	}
	if found < 50 {
		t.Fatalf("found %d problem formats: is the pattern still right?", found)
	}
}

// A check step's findings, joined with "; ", are translated part by part.
func TestMsgTranslatesJoinedParts(t *testing.T) {
	in := "describe topics: 3 visible; create topics: allowed (validated only, nothing created); read consumer-group offsets: allowed"
	want := "查看Topic：可見3個；創建Topic：允許（僅校驗，未創建）；讀取消費進度：允許"
	if got := Msg(zhCtx(), in); got != want {
		t.Errorf("Msg(%q) = %q, want %q", in, got, want)
	}
	in = "1 broker (ids 1), controller 1, Kafka 4.3 or newer"
	if got := Msg(zhCtx(), in); got != "1個Broker（ID：1），控制器1，Kafka 4.3 or newer" {
		t.Errorf("Msg(%q) = %q", in, got)
	}
}

// The connectivity check's messages read in zh-TW too, the address kept.
func TestMsgCheckSteps(t *testing.T) {
	for in, want := range map[string]string{
		"cannot reach 10.0.0.1:9092: connection refused — check the address and that the broker is running": "無法連接10.0.0.1:9092：連接被拒絕 — 請檢查地址以及Broker是否在運行",
		`TLS 1.3 with k1:9093; certificate "k1" issued by "ca", valid until 2027-01-01`:                     `TLS 1.3，連接k1:9093；證書"k1"由"ca"簽發，有效期至2027-01-01`,
		"not run: the tcp step failed": "未運行：tcp步驟失敗",
	} {
		if got := Msg(zhCtx(), in); got != want {
			t.Errorf("Msg(%q) = %q, want %q", in, got, want)
		}
	}
}

// The Connect cluster check's verdicts read in zh-TW, Connect's own words
// kept.
func TestMsgConnectClusterCheck(t *testing.T) {
	for in, want := range map[string]string{
		"1 of 2 workers answer (Kafka Connect 4.1.0)":                                            "2個Worker中有1個應答（Kafka Connect 4.1.0）",
		"not checked: no worker answers":                                                         "未檢查：沒有Worker應答",
		"not checked: MirrorSourceConnector is not known to be installed":                        "未檢查：無法確認已安裝MirrorSourceConnector",
		"MirrorMaker 2 connectors missing: MirrorHeartbeatConnector":                             "缺少MirrorMaker 2連接器：MirrorHeartbeatConnector",
		"the workers write to different Kafka clusters (a, b): they are not one Connect cluster": "這些Worker寫入不同的Kafka集群（a, b）：它們不屬於同一個Connect集群",
		"the workers refuse client settings in connector configurations: The 'None' policy does not allow 'linger.ms' to be overridden in the connector configuration.": "Worker拒絕連接器配置中的客戶端設置：The 'None' policy does not allow 'linger.ms' to be overridden in the connector configuration.",
		"retry; check the worker's log if it persists": "請重試；如果問題持續，請查看Worker的日誌",
	} {
		if got := Msg(zhCtx(), in); got != want {
			t.Errorf("Msg(%q) = %q, want %q", in, got, want)
		}
	}
}

// verdictFormat finds the Connect cluster check's verdicts and fixes:
// it.Verdict = "..." or fmt.Sprintf("...", ...), it.Fix = "...", and the
// reasons given to skippedVerdict.
var verdictFormat = regexp.MustCompile(`(?:\.(?:Verdict|Fix)\s*=\s*(?:fmt\.Sprintf\()?|skippedVerdict\([\w.]+,\s*)("(?:[^"\\]|\\.)*")`)

// TestEveryConnectCheckVerdictIsTranslated: a verdict added to the Connect
// cluster check without a zh-TW translation fails here.
func TestEveryConnectCheckVerdictIsTranslated(t *testing.T) {
	c, err := loadFormats("zh-TW")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "service", "connectcheck.go"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, m := range verdictFormat.FindAllStringSubmatch(string(b), -1) {
		var format string
		if err := json.Unmarshal([]byte(m[1]), &format); err != nil {
			t.Fatal(err)
		}
		found++
		re, _, _ := compileFormat(format)
		_, ok := c.exact[format]
		for _, e := range c.entries {
			ok = ok || e.re.String() == re.String()
		}
		if !ok {
			t.Errorf("%q has no zh-TW translation: add it to internal/i18n/service/zh-TW.json", format)
		}
	}
	if found < 15 {
		t.Fatalf("found %d verdict formats: is the pattern still right?", found)
	}
}

// A Connect task's reason while a worker is dead reads in zh-TW, the
// worker and connectors kept.
func TestMsgConnectDeadWorker(t *testing.T) {
	in := "worker 10.0.0.7:8083 does not answer (since 06:26:52 UTC, 5s): connector k.t.A-B.source, k.t.A-B.source task 0 run there; only the partitions of the other 1 copy tasks are copied until they move. Connect moves them to a live worker once the worker's session has timed out (session.timeout.ms) and scheduled.rebalance.max.delay.ms has passed (5 minutes unless set); a worker back within that time takes them back"
	want := "Worker 10.0.0.7:8083無應答（自06:26:52 UTC起，已5s）：connector k.t.A-B.source, k.t.A-B.source task 0在其上運行；在它們移走之前，只複製其餘1個複製任務的分區。待該Worker的會話逾時（session.timeout.ms）且經過scheduled.rebalance.max.delay.ms（未設定時為5分鐘）後，Connect會將它們移至存活的Worker；該Worker在此期間恢復則重新接手"
	if got := Msg(zhCtx(), in); got != want {
		t.Errorf("Msg(%q) =\n%q, want\n%q", in, got, want)
	}
	in = strings.Replace(in, "does not answer", "has left the Connect group", 1)
	want = strings.Replace(want, "無應答", "已離開Connect組", 1)
	if got := Msg(zhCtx(), in); got != want {
		t.Errorf("Msg(%q) =\n%q, want\n%q", in, got, want)
	}
}

// A switchover's steps and refusals read in zh-TW, names and numbers kept.
func TestMsgSwitchover(t *testing.T) {
	for in, want := range map[string]string{
		"3 groups without members on either side; 1 target topics in place; lag 12 records over 3 partitions":       "3個消費組在兩側都沒有成員；1個目標Topic就緒；3個分區共落後12條",
		"stop the consumers of every group to move: g1 has 2 members on the source; g2 has 1 members on the target": "請停止每個要遷移的消費組的消費者：g1在源端有2個成員；g2在目標端有1個成員",
		"15 records still to copy: t-1 (15)": "還有15條待複製：t-1 (15)",
		"2 groups committed on the target: 5 of 6 partitions translated exactly; at most 7 records may be read again (and an unbounded number on partitions whose translation nothing bounds: see the report)": "2個消費組已提交到目標端：5/6個分區精確轉換；最多7條消息可能被重複讀取（另有無從界定轉換的分區，其數量不限：見報告）",
		"task t1 is paused: resume it, so the switchover can drain it":   "任務t1已暫停：請恢復它，以便切換可以將其排空",
		"groups is required: a list of consumer group names, or \"all\"": "消費組為必填項：消費組名稱列表，或\"all\"",
	} {
		if got := Msg(zhCtx(), in); got != want {
			t.Errorf("Msg(%q) = %q, want %q", in, got, want)
		}
	}
}
