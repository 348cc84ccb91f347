package store_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
	"github.com/kmirror/kmirror/migrations"
)

// seeds are rows written right after a migration, in the schema of that
// migration, as the kmirror that shipped it wrote them. Every migration
// needs an entry: the upgrade test below fills a database with the rows of
// each earlier schema, migrates it to the newest and checks them. A
// migration that reshapes rows updates the checks, never the seeds.
var seeds = map[int][]string{
	1: {
		`INSERT INTO users (name, password_hash, created_at) VALUES ('seed-user', '$2a$10$seedhash', 1700000000)`,
		`INSERT INTO clusters (name, bootstrap_servers, security_protocol, sasl_mechanism, username, password_ciphertext, ca_pem, created_at)
		 VALUES ('seed-east', 'a:9092,b:9092', 'SASL_SSL', 'SCRAM-SHA-512', 'alice', X'010203', 'PEM', 1700000001)`,
		`INSERT INTO clusters (name, bootstrap_servers, security_protocol, created_at) VALUES ('seed-west', 'c:9092', 'PLAINTEXT', 1700000002)`,
		`INSERT INTO settings (key, value) VALUES ('seed-setting', 'kept')`,
	},
	2: {
		`INSERT INTO tasks (name, current_cluster, peer_cluster, spec, peer_password_ciphertext, desired_state, last_action, last_action_by, last_action_at, last_error, created_at)
		 VALUES ('seed-task', 'seed-east', 'seed-west',
		 '{"name":"seed-task","type":"kafka-replication","current":{"cluster":"seed-east","alias":"A"},"peer":{"alias":"B","config_type":"cluster","cluster":"seed-west"},"rules":{"direction":"push","topics":["orders"],"tasks":2,"rename_topics":false,"add_source_header":false,"sync_consumer_offsets":false,"replication_factor":0,"start_offset":"","compression":""}}',
		 NULL, 'paused', 'pause', 'seed-user', 1700000010, 'peer unreachable', 1700000003)`,
		`INSERT INTO tasks (name, current_cluster, peer_cluster, spec, peer_password_ciphertext, desired_state, last_action, last_action_by, last_action_at, created_at)
		 VALUES ('seed-by-address', 'seed-east', NULL,
		 '{"name":"seed-by-address","type":"kafka-replication","current":{"cluster":"seed-east","alias":"A"},"peer":{"alias":"B","config_type":"address","address":["x:9092"],"security_protocol":"SASL_PLAINTEXT","sasl_mechanism":"PLAIN","username":"u"},"rules":{"direction":"pull","topics":["orders"],"tasks":1,"rename_topics":true,"add_source_header":false,"sync_consumer_offsets":false,"replication_factor":0,"start_offset":"","compression":""}}',
		 X'090909', 'running', 'create', 'api', 1700000004, 1700000004)`,
	},
	3: {
		`INSERT INTO users (name, password_hash, role, session_epoch, created_at) VALUES ('seed-viewer', '$2a$10$viewerhash', 'viewer', 3, 1700000020)`,
	},
	4: {
		`INSERT INTO api_tokens (name, role, token_sha256, created_by, created_at) VALUES ('seed-ci', 'operator', 'ab12', 'seed-user', 1700000030)`,
		`INSERT INTO audit_log (at, actor, role, address, action, object, outcome) VALUES (1700000031000, 'seed-user', 'admin', '127.0.0.1', 'task.create', 'seed-task', 'ok')`,
	},
	5: {
		`INSERT INTO users (name, password_hash, role, session_epoch, created_at) VALUES ('seed-operator', '$2a$10$operatorhash', 'operator', 1, 1700000040)`,
	},
	6: {
		`INSERT INTO connect_clusters (name, urls, username, password_ciphertext, ca_pem, kafka_cluster, config_provider, created_at)
		 VALUES ('seed-connect', 'http://w1:8083,http://w2:8083', 'cu', X'0707', 'CPEM', 'seed-west', 'vault', 1700000040)`,
		`INSERT INTO tasks (name, current_cluster, peer_cluster, connect_cluster, spec, desired_state, last_action, last_action_by, last_action_at, created_at)
		 VALUES ('seed-on-connect', 'seed-west', 'seed-east', 'seed-connect',
		 '{"name":"seed-on-connect","type":"kafka-replication","current":{"cluster":"seed-west","alias":"B"},"peer":{"alias":"A","config_type":"cluster","cluster":"seed-east"},"rules":{"direction":"pull","topics":["orders"],"tasks":1,"rename_topics":true,"add_source_header":false,"sync_consumer_offsets":true,"replication_factor":-1,"start_offset":"earliest","compression":"none"},"engine":"connect:seed-connect"}',
		 'running', 'create', 'seed-user', 1700000041, 1700000041)`,
		`UPDATE clusters SET smart_connect_engine = 'seed-connect' WHERE name = 'seed-west'`,
	},
	7: {
		`INSERT INTO clusters (name, bootstrap_servers, security_protocol, sasl_mechanism, client_cert_pem, oauth, credentials_ciphertext, created_at)
		 VALUES ('seed-oauth', 'o:9093', 'SASL_SSL', 'OAUTHBEARER', 'CERTPEM', '{"token_endpoint":"https://idp/token","client_id":"cid","scope":"s"}', X'0505', 1700000050)`,
		`INSERT INTO tasks (name, current_cluster, peer_cluster, spec, peer_credentials_ciphertext, desired_state, last_action, last_action_by, last_action_at, created_at)
		 VALUES ('seed-peer-cert', 'seed-oauth', NULL,
		 '{"name":"seed-peer-cert","type":"kafka-replication","current":{"cluster":"seed-oauth","alias":"A"},"peer":{"alias":"B","config_type":"address","address":["y:9093"],"security_protocol":"SSL","client_cert_pem":"PCERT"},"rules":{"direction":"pull","topics":["orders"],"tasks":1,"rename_topics":true,"add_source_header":false,"sync_consumer_offsets":false,"replication_factor":-1,"start_offset":"earliest","compression":"none"}}',
		 X'0606', 'running', 'create', 'seed-user', 1700000051, 1700000051)`,
	},
	8: {
		`INSERT INTO connect_clusters (name, urls, kafka_cluster, client_cert_pem, client_key_ciphertext, bearer_token_ciphertext, created_at)
		 VALUES ('seed-connect-mtls', 'https://c1:8443', 'seed-east', 'CERTPEM', X'0808', X'0909', 1700000050)`,
	},
	9: {
		`INSERT INTO users (name, password_hash, role, account_id, created_at) VALUES ('seed-nine', '$2a$10$ninehash', 'viewer', 'acc9', 1700000060)`,
		`INSERT INTO console_sessions (id_sha256, account_id, created_at) VALUES ('sess9', 'acc9', 1700000061)`,
		`INSERT INTO api_tokens (name, role, token_sha256, created_by, created_at, owner_account_id, expires_at, last_used_at)
		 VALUES ('seed-nine-token', 'viewer', 'cd34', 'seed-nine', 1700000062, 'acc9', 1800000000, 1700000063)`,
		`UPDATE destination_policy SET mode = 'networks', networks = '10.0.0.0/8,192.168.0.0/16', changed_by = 'seed-nine', changed_at = 1700000064`,
	},
	10: {
		`INSERT INTO switchovers (task, state, body, created_at, updated_at) VALUES ('seed-task', 'waiting',
		 '{"task":"seed-task","mode":"planned","direction":"A->B","groups":["g1"],"state":"waiting","steps":[{"name":"preflight","state":"waiting","message":"stop g1"}],"report":{"groups":[]}}',
		 1700000070, 1700000071)`,
	},
	11: {
		`INSERT INTO connect_clusters (name, urls, kafka_cluster, auto_restart, created_at)
		 VALUES ('seed-connect-restart', 'http://r1:8083', 'seed-east', 1, 1700000080)`,
	},
}

// migrationsUpTo is the embedded migrations of version <= v, and the sorted
// versions of all of them.
func migrationsUpTo(t *testing.T, v int) (fstest.MapFS, []int) {
	t.Helper()
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	sub := fstest.MapFS{}
	var all []int
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".up.sql") {
			continue
		}
		all = append(all, n)
		if n <= v {
			b, err := fs.ReadFile(migrations.FS, e.Name())
			if err != nil {
				t.Fatal(err)
			}
			sub[e.Name()] = &fstest.MapFile{Data: b}
		}
	}
	sort.Ints(all)
	return sub, all
}

func TestEveryMigrationHasSeedRows(t *testing.T) {
	_, all := migrationsUpTo(t, 0)
	for _, v := range all {
		if len(seeds[v]) == 0 {
			t.Errorf("migration %04d has no seed rows: add rows in its schema to seeds in upgrade_test.go", v)
		}
	}
}

// Every earlier schema, holding rows, migrates to the newest with its rows
// intact and readable by this binary.
func TestUpgradeFromEachEarlierSchemaKeepsTheRows(t *testing.T) {
	ctx := context.Background()
	_, all := migrationsUpTo(t, 0)
	newest := all[len(all)-1]
	// From the newest too: no migration is pending, but its seed rows are
	// checked to be what this binary reads back.
	for _, from := range all {
		t.Run("from "+strconv.Itoa(from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), store.FileName)
			raw, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
			if err != nil {
				t.Fatal(err)
			}
			// One migration at a time, each followed by its rows, as a
			// database upgraded release by release would hold them.
			for _, v := range all {
				if v > from {
					break
				}
				sub, _ := migrationsUpTo(t, v)
				if err := store.Migrate(ctx, raw, sub); err != nil {
					t.Fatalf("migrate to %d: %v", v, err)
				}
				for _, s := range seeds[v] {
					if _, err := raw.ExecContext(ctx, s); err != nil {
						t.Fatalf("seed rows of %d: %v", v, err)
					}
				}
			}
			raw.Close()

			db, err := store.OpenFile(ctx, path)
			if err != nil {
				t.Fatalf("upgrade from %d: %v", from, err)
			}
			defer db.Close()
			if v, err := db.SchemaVersion(ctx); err != nil || v != newest {
				t.Fatalf("schema version %d (err %v), want %d", v, err, newest)
			}
			checkSeedRows(t, db, from)
		})
	}
}

// checkSeedRows checks, through the store's own reads, the rows seeded up
// to version from.
func checkSeedRows(t *testing.T, db *store.DB, from int) {
	t.Helper()
	ctx := context.Background()
	if from >= 1 {
		u, err := db.User(ctx, "seed-user")
		if err != nil || u.PasswordHash != "$2a$10$seedhash" || u.CreatedAt.Unix() != 1700000000 {
			t.Errorf("user: %+v, %v", u, err)
		}
		c, err := db.Cluster(ctx, "seed-east")
		if err != nil || strings.Join(c.BootstrapServers, ",") != "a:9092,b:9092" || c.SecurityProtocol != "SASL_SSL" ||
			c.SASLMechanism != "SCRAM-SHA-512" || c.Username != "alice" || string(c.PasswordCiphertext) != "\x01\x02\x03" || c.CAPEM != "PEM" {
			t.Errorf("cluster: %+v, %v", c, err)
		}
		// Clusters from before Smart Connect had a switch keep working.
		if c, err := db.Cluster(ctx, "seed-east"); err != nil || !c.SmartConnect.Enabled || c.SmartConnect.ConnectCluster != "" {
			t.Errorf("Smart Connect of seed-east: %+v, %v", c.SmartConnect, err)
		}
		want := 2
		if from >= 7 {
			want = 3 // seed-oauth
		}
		if cs, err := db.ListClusters(ctx); err != nil || len(cs) != want {
			t.Errorf("clusters: %d, %v; want %d", len(cs), err, want)
		}
		// Clusters from before client certificates and OAuth have none.
		if c, err := db.Cluster(ctx, "seed-east"); err != nil || c.ClientCertPEM != "" || c.OAuth != (cluster.OAuth{}) || c.CredentialsCiphertext != nil {
			t.Errorf("credentials of seed-east: %+v, %v", c, err)
		}
		// 0005 drops the settings table, which nothing read: its seed row
		// goes with it.
		var n int
		if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'settings'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("settings tables: %d, %v; want none", n, err)
		}
	}
	if from >= 2 {
		tk, err := db.Task(ctx, "seed-task")
		if err != nil || tk.DesiredState != task.DesiredPaused || tk.LastActionBy != "seed-user" || tk.LastError != "peer unreachable" ||
			tk.Spec.Peer.Cluster != "seed-west" || tk.Spec.Rules.Tasks != 2 || tk.LastActionAt.Unix() != 1700000010 {
			t.Errorf("task: %+v, %v", tk, err)
		}
		tk, err = db.Task(ctx, "seed-by-address")
		if err != nil || string(tk.PeerPasswordCiphertext) != "\x09\x09\x09" || tk.Spec.Peer.Address[0] != "x:9092" || !tk.Spec.Rules.RenameTopics {
			t.Errorf("task by address: %+v, %v", tk, err)
		}
		want := 2
		if from >= 6 {
			want = 3 // seed-on-connect's peer
		}
		if names, err := db.TasksUsingCluster(ctx, "seed-east"); err != nil || len(names) != want {
			t.Errorf("tasks using seed-east: %v, %v", names, err)
		}
	}
	if from >= 7 {
		c, err := db.Cluster(ctx, "seed-oauth")
		if err != nil || c.ClientCertPEM != "CERTPEM" || string(c.CredentialsCiphertext) != "\x05\x05" ||
			c.OAuth != (cluster.OAuth{TokenEndpoint: "https://idp/token", ClientID: "cid", Scope: "s"}) {
			t.Errorf("cluster with OAuth: %+v, %v", c, err)
		}
		tk, err := db.Task(ctx, "seed-peer-cert")
		if err != nil || string(tk.PeerCredentialsCiphertext) != "\x06\x06" || tk.Spec.Peer.ClientCertPEM != "PCERT" || tk.Spec.Peer.SecurityProtocol != "SSL" {
			t.Errorf("task with a peer certificate: %+v, %v", tk, err)
		}
	}
	if from >= 1 { // accounts from before roles were all admins
		if u, err := db.User(ctx, "seed-user"); err != nil || u.Role != "admin" || len(u.AccountID) != 32 {
			t.Errorf("user from before roles: %+v, %v", u, err)
		}
	}
	if from >= 3 {
		if u, err := db.User(ctx, "seed-viewer"); err != nil || u.Role != "viewer" || len(u.AccountID) != 32 {
			t.Errorf("viewer: %+v, %v", u, err)
		}
	}
	if from >= 4 {
		// A token from before owners belongs to the account that made it.
		if tk, err := db.TokenByHash(ctx, "ab12"); err != nil || tk.Name != "seed-ci" || tk.Role != "operator" || tk.OwnerAccountID == "" || !tk.ExpiresAt.IsZero() {
			t.Errorf("token: %+v, %v", tk, err)
		}
		if es, err := db.ListAudit(ctx, store.AuditFilter{}); err != nil || len(es) != 1 || es[0].Object != "seed-task" {
			t.Errorf("audit: %+v, %v", es, err)
		}
	}
	if from >= 5 {
		if u, err := db.User(ctx, "seed-operator"); err != nil || u.Role != "operator" || len(u.AccountID) != 32 {
			t.Errorf("operator: %+v, %v", u, err)
		}
	}
	if from >= 6 {
		c, err := db.ConnectCluster(ctx, "seed-connect")
		if err != nil || strings.Join(c.URLs, ",") != "http://w1:8083,http://w2:8083" || c.Username != "cu" ||
			string(c.PasswordCiphertext) != "\x07\x07" || c.CAPEM != "CPEM" || c.KafkaCluster != "seed-west" || c.ConfigProvider != "vault" {
			t.Errorf("Connect cluster: %+v, %v", c, err)
		}
		if tk, err := db.Task(ctx, "seed-on-connect"); err != nil || tk.Spec.Engine != "connect:seed-connect" {
			t.Errorf("task on Connect: %+v, %v", tk, err)
		}
		if c, err := db.Cluster(ctx, "seed-west"); err != nil || !c.SmartConnect.Enabled || c.SmartConnect.ConnectCluster != "seed-connect" {
			t.Errorf("Smart Connect of seed-west: %+v, %v", c.SmartConnect, err)
		}
		if err := db.DeleteConnectCluster(ctx, "seed-connect"); !errors.Is(err, store.ErrReferenced) {
			t.Errorf("deleting a Connect cluster tasks run on: %v, want ErrReferenced", err)
		}
		// Registered before client certificates and bearer tokens: none.
		if c.ClientCertPEM != "" || c.ClientKeyCiphertext != nil || c.BearerTokenCiphertext != nil {
			t.Errorf("Connect cluster from before 0008 has a client certificate or token: %+v", c)
		}
		if c.AutoRestart {
			t.Errorf("Connect cluster from before 0011 restarts failed connectors: %+v", c)
		}
	}
	if from >= 8 {
		c, err := db.ConnectCluster(ctx, "seed-connect-mtls")
		if err != nil || c.ClientCertPEM != "CERTPEM" || string(c.ClientKeyCiphertext) != "\x08\x08" ||
			string(c.BearerTokenCiphertext) != "\x09\x09" || c.PasswordCiphertext != nil || c.Username != "" {
			t.Errorf("Connect cluster with a client certificate and a token: %+v, %v", c, err)
		}
	}
	if from >= 11 {
		if c, err := db.ConnectCluster(ctx, "seed-connect-restart"); err != nil || !c.AutoRestart {
			t.Errorf("Connect cluster with auto restart: %+v, %v", c, err)
		}
	}
	if from >= 9 {
		if u, err := db.SessionUser(ctx, "sess9"); err != nil || u.Name != "seed-nine" || u.AccountID != "acc9" {
			t.Errorf("session: %+v, %v", u, err)
		}
		if tk, err := db.TokenByHash(ctx, "cd34"); err != nil || tk.OwnerAccountID != "acc9" || tk.ExpiresAt.Unix() != 1800000000 || tk.LastUsedAt.Unix() != 1700000063 {
			t.Errorf("token with an owner: %+v, %v", tk, err)
		}
		if p, err := db.DestinationPolicy(ctx); err != nil || p.Mode != "networks" || strings.Join(p.Networks, " ") != "10.0.0.0/8 192.168.0.0/16" || p.ChangedBy != "seed-nine" {
			t.Errorf("destination policy: %+v, %v", p, err)
		}
	}
	if from >= 10 {
		if sw, err := db.OpenSwitchovers(ctx); err != nil || len(sw) != 1 || sw[0].Task != "seed-task" || sw[0].Steps[0].Message != "stop g1" || sw[0].ID == 0 {
			t.Errorf("open switchovers: %+v, %v", sw, err)
		}
	}
	if from < 9 { // the policy of a database from before it: any address, as before
		if p, err := db.DestinationPolicy(ctx); err != nil || p.Mode != "any" || len(p.Networks) != 0 || !p.ChangedAt.IsZero() {
			t.Errorf("destination policy after the upgrade: %+v, %v", p, err)
		}
	}
}
