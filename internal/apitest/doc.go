// Package apitest holds the JSON API's integration tests on real Apache
// Kafka (internal/kafkatest): a task created through the API replicates
// between real clusters, deleting it stops it, and the connectivity check
// and create-time rules answer with what real brokers say. It has no code
// of its own.
package apitest
