package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// ReadOffsetsTopic reads the source offsets one connector has in a Connect
// offsets topic, as Connect keeps them: key ["<connector>", {partition}],
// value {offset} or a tombstone, the last record of a key winning. This is
// how a MirrorMaker 2 in dedicated mode, which has no REST API to ask, keeps
// its progress (mm2-offsets.<source alias>.internal on the target, connector
// MirrorSourceConnector). The topic is read up to its end when called.
func ReadOffsetsTopic(ctx context.Context, s cluster.Settings, topic, connector string) ([]Offset, error) {
	cfg, err := s.Config("kmirror-offsets-reader")
	if err != nil {
		return nil, err
	}
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", s.Name, err)
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("offsets topic %s on %s: %w", topic, s.Name, err)
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	latest := map[string]Offset{} // by the partition's JSON
	var order []string
	for _, p := range parts {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return nil, fmt.Errorf("end of %s-%d: %w", topic, p, err)
		}
		oldest, err := client.GetOffset(topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, fmt.Errorf("start of %s-%d: %w", topic, p, err)
		}
		if end <= oldest {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, oldest)
		if err != nil {
			return nil, fmt.Errorf("read %s-%d: %w", topic, p, err)
		}
		err = func() error {
			defer pc.Close()
			for {
				select {
				case m := <-pc.Messages():
					name, part, ok := offsetKey(m.Key)
					if ok && name == connector {
						key := string(part)
						if _, seen := latest[key]; !seen {
							order = append(order, key)
						}
						if m.Value == nil {
							latest[key] = Offset{}
						} else if o, err := offsetRecord(part, m.Value); err == nil {
							latest[key] = o
						}
					}
					if m.Offset+1 >= end {
						return nil
					}
				case err := <-pc.Errors():
					return err
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(30 * time.Second):
					return errors.New("no record for 30 s before the end")
				}
			}
		}()
		if err != nil {
			return nil, fmt.Errorf("read %s-%d: %w", topic, p, err)
		}
	}
	var out []Offset
	for _, k := range order {
		if o := latest[k]; o.Partition != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// offsetKey splits a Connect offsets-topic key into the connector's name
// and the source partition's JSON.
func offsetKey(b []byte) (string, json.RawMessage, bool) {
	var key []json.RawMessage
	if json.Unmarshal(b, &key) != nil || len(key) != 2 {
		return "", nil, false
	}
	var name string
	if json.Unmarshal(key[0], &name) != nil {
		return "", nil, false
	}
	return name, key[1], true
}

func offsetRecord(part json.RawMessage, value []byte) (Offset, error) {
	var o Offset
	dec := json.NewDecoder(bytes.NewReader(part))
	dec.UseNumber()
	if err := dec.Decode(&o.Partition); err != nil {
		return o, err
	}
	dec = json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	return o, dec.Decode(&o.Offset)
}
