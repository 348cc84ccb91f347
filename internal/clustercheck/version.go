package clustercheck

import "fmt"

// metadataVersions maps a finalized metadata.version feature level to the
// Kafka release that introduced it (Kafka's MetadataVersion enum; levels
// below 7 predate KRaft's production use).
var metadataVersions = map[int16]string{
	7: "3.3-IV3", 8: "3.4-IV0",
	9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2",
	12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2",
	15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4",
	20: "3.8-IV0", 21: "3.9-IV0",
	22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3",
	26: "4.1-IV0", 27: "4.1-IV1",
	28: "4.2-IV0", 29: "4.2-IV1",
	30: "4.3-IV0",
	31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2",
	34: "4.5-IV0",
}

// describeMetadataVersion says what a metadata.version level tells about
// the brokers: they run at least that release (an operator may keep an
// older level after an upgrade, so it is a lower bound).
func describeMetadataVersion(level int16) string {
	v, ok := metadataVersions[level]
	if !ok {
		if level > 34 {
			return fmt.Sprintf("newer than 4.5 (metadata.version level %d)", level)
		}
		return fmt.Sprintf("unknown (metadata.version level %d)", level)
	}
	release := v[:len(v)-4]
	return fmt.Sprintf("%s or newer (metadata.version %s)", release, v)
}
