package connecttest

// Credentials are settings holding credentials under every prefix
// MirrorMaker 2 and Kafka Connect take client settings from (the source
// and target clusters', their consumers', producers' and admins', a
// connector's overrides, the top level) and under extra prefixes (a
// dedicated MM2's "A."), with a vendor's unknown option among them. Every
// value holds marker, so a test can search any answer, page or log for it.
func Credentials(marker string, extraPrefixes ...string) map[string]string {
	prefixes := append([]string{"", "source.cluster.", "target.cluster.", "consumer.override.", "producer.override.", "admin.override.",
		"consumer.", "producer.", "admin."}, extraPrefixes...)
	for _, side := range []string{"source.", "target."} {
		for _, client := range []string{"consumer.", "producer.", "admin."} {
			prefixes = append(prefixes, side+client)
		}
	}
	out := map[string]string{}
	for _, p := range prefixes {
		out[p+"sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="jaas-` + marker + `";`
		out[p+"ssl.truststore.password"] = "truststore-" + marker
		out[p+"ssl.keystore.password"] = "keystore-" + marker
		out[p+"ssl.key.password"] = "key-" + marker
		out[p+"ssl.keystore.key"] = "-----BEGIN PRIVATE KEY-----" + marker
		out[p+"sasl.oauthbearer.client.secret"] = "oauth-" + marker
		out[p+"basic.auth.user.info"] = "user:" + marker
		out[p+"some.vendor.option"] = "vendor-" + marker
	}
	return out
}
