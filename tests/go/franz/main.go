// Command franz runs one scenario of franz-go (kgo, kadm) against a broker, as a Go service would use the client,
// and exits 0 when the client saw what Apache Kafka gives it; otherwise it prints what differed and exits 1.
//
//	franz -scenario NAME -bootstrap HOST:PORT [-sasl HOST:PORT] [-name PREFIX]
//
// -bootstrap is a PLAINTEXT listener whose principal may do anything; -sasl a SASL_PLAINTEXT listener with the
// PLAIN users admin/admin-secret (a super user) and alice/alice-secret (no rights of her own), for "acls".
// tests/clients/test_go_clients.py starts kafka-shim and runs each scenario.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kafka-shim/go-peers/peer"
)

var (
	scenario  = peer.Scenario
	bootstrap = peer.Bootstrap
	saslAddr  = peer.SASL
	prefix    = flag.String("name", "go-franz", "prefix of the topics, groups and transactional ids made")
)

var scenarios = map[string]func(ctx context.Context) error{
	"admin-topics":    adminTopics,
	"codecs":          codecs,
	"group-rebalance": groupRebalance,
	"transactions":    transactions,
	"acls":            acls,
}

func main() {
	flag.Parse()
	peer.Run(scenarios, *scenario, *scenario)
}

func name(s string) string { return *prefix + "-" + s }

func newClient(opts ...kgo.Opt) *kgo.Client {
	base := []kgo.Opt{kgo.SeedBrokers(*bootstrap), kgo.ClientID("franz-peer"), kgo.RetryTimeout(peer.Patience)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		panic(err)
	}
	return cl
}

func saslClient(user string, opts ...kgo.Opt) *kgo.Client {
	auth := kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())
	base := []kgo.Opt{kgo.SeedBrokers(*saslAddr), auth, kgo.ClientID("franz-peer"), kgo.RetryTimeout(10 * time.Second)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		panic(err)
	}
	return cl
}

// newAdmin: a client for administration and plain producing, and kadm over it.
func newAdmin() (*kgo.Client, *kadm.Client) {
	cl := newClient()
	return cl, kadm.NewClient(cl)
}

func createTopic(ctx context.Context, adm *kadm.Client, partitions int32, topic string, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

// consume polls until n records arrived or the patience runs out.
func consume(ctx context.Context, cl *kgo.Client, n int) ([]*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, peer.Patience)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return got, fmt.Errorf("%d of %d records after %s", len(got), n, peer.Patience)
		}
		if err := fetches.Err(); err != nil {
			return got, err
		}
		got = append(got, fetches.Records()...)
	}
	return got, nil
}

func sorted(records []*kgo.Record) []string {
	out := make([]string, 0, len(records))
	for _, r := range records {
		out = append(out, fmt.Sprintf("%s/%d@%d %s=%s %v", r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Headers))
	}
	sort.Strings(out)
	return out
}

// adminTopics: create with a config, the same name again, describe the config, add partitions, delete.
func adminTopics(ctx context.Context) error {
	cl, adm := newAdmin()
	defer cl.Close()
	topic := name("admin")
	retention := "3600000"
	if err := createTopic(ctx, adm, 3, topic, map[string]*string{"retention.ms": &retention}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := createTopic(ctx, adm, 3, topic, nil); !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create again: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return fmt.Errorf("describe configs: %w", err)
	}
	config, err := configs.On(topic, nil)
	if err != nil || config.Err != nil {
		return fmt.Errorf("describe configs: %v %v", err, config.Err)
	}
	found := false
	for _, c := range config.Configs {
		if c.Key == "retention.ms" {
			found = c.MaybeValue() == retention && c.Source.String() == "DYNAMIC_TOPIC_CONFIG"
		}
	}
	if !found {
		return fmt.Errorf("retention.ms is not %s from DYNAMIC_TOPIC_CONFIG: %+v", retention, config.Configs)
	}
	added, err := adm.UpdatePartitions(ctx, 5, topic)
	if err != nil || added.Error() != nil {
		return fmt.Errorf("create partitions: %v %v", err, added.Error())
	}
	// Kafka's metadata reaches its brokers a moment after the answer.
	if err := peer.WaitUntil(ctx, func() bool {
		details, err := adm.ListTopics(ctx, topic)
		return err == nil && len(details[topic].Partitions) == 5
	}); err != nil {
		return fmt.Errorf("the topic never listed its 5 partitions")
	}
	deleted, err := adm.DeleteTopics(ctx, topic)
	if err != nil || deleted.Error() != nil {
		return fmt.Errorf("delete: %v %v", err, deleted.Error())
	}
	if err := peer.WaitUntil(ctx, func() bool {
		details, err := adm.ListTopics(ctx, topic)
		return err == nil && errors.Is(details[topic].Err, kerr.UnknownTopicOrPartition)
	}); err != nil {
		return fmt.Errorf("the deleted topic is still listed")
	}
	return nil
}

// codecs: keyed records with headers, produced idempotently (franz-go's default) with each codec, read back as sent.
func codecs(ctx context.Context) error {
	admin, adm := newAdmin()
	defer admin.Close()
	for _, codec := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}} {
		topic := name("codec-" + codec.name)
		if err := createTopic(ctx, adm, 2, topic, nil); err != nil {
			return fmt.Errorf("%s: create: %w", codec.name, err)
		}
		producer := newClient(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec.codec))
		var sent []*kgo.Record
		for i := 0; i < 200; i++ {
			sent = append(sent, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(strings.Repeat(fmt.Sprint(i), 1+i%40)),
				Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(fmt.Sprint(i))}}})
		}
		if err := producer.ProduceSync(ctx, sent...).FirstErr(); err != nil {
			producer.Close()
			return fmt.Errorf("%s: produce: %w", codec.name, err)
		}
		producer.Close()
		consumer := newClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got, err := consume(ctx, consumer, len(sent))
		consumer.Close()
		if err != nil {
			return fmt.Errorf("%s: consume: %w", codec.name, err)
		}
		if want, have := strings.Join(sorted(sent), "\n"), strings.Join(sorted(got), "\n"); want != have {
			return fmt.Errorf("%s: read back differs:\n%s\nwant:\n%s", codec.name, have, want)
		}
	}
	return nil
}

// groupRebalance: two members share four partitions (cooperative-sticky), commit, and a later member resumes.
func groupRebalance(ctx context.Context) error {
	admin, adm := newAdmin()
	defer admin.Close()
	topic, group := name("group"), name("group")
	if err := createTopic(ctx, adm, 4, topic, nil); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	assigned := make(chan int, 16)
	member := func() *kgo.Client {
		return newClient(kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.DisableAutoCommit(),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
				assigned <- len(parts[topic])
			}))
	}
	first := member()
	defer first.Close()
	produce := func(from, to int) error {
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))})
		}
		return admin.ProduceSync(ctx, rs...).FirstErr()
	}
	if err := produce(0, 40); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	got, err := consume(ctx, first, 40)
	if err != nil {
		return fmt.Errorf("first member: %w", err)
	}
	if err := first.CommitRecords(ctx, got...); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	second := member()
	// The second member gets its half once the first gives two partitions up (cooperative: in a second round).
	split := func() bool {
		described, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false
		}
		g := described[group]
		if g.State != "Stable" || len(g.Members) != 2 {
			return false
		}
		for _, m := range g.Members {
			c, ok := m.Assigned.AsConsumer()
			if !ok || len(c.Topics) != 1 || len(c.Topics[0].Partitions) != 2 {
				return false
			}
		}
		return true
	}
	// Members make progress only while polled.
	pollCtx, stopPolling := context.WithCancel(ctx)
	for _, m := range []*kgo.Client{first, second} {
		go func(m *kgo.Client) {
			for pollCtx.Err() == nil {
				m.PollFetches(pollCtx)
			}
		}(m)
	}
	err = peer.WaitUntil(ctx, split)
	stopPolling()
	second.Close()
	if err != nil {
		return fmt.Errorf("the two members never held two partitions each")
	}
	first.Close()
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return fmt.Errorf("lag: %w", err)
	}
	lag := lags[group]
	if err := lag.Error(); err != nil {
		return fmt.Errorf("lag: %w", err)
	}
	if total := lag.Lag.Total(); total != 0 {
		return fmt.Errorf("lag %d after committing every record", total)
	}
	if err := produce(40, 50); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	third := member()
	defer third.Close()
	later, err := consume(ctx, third, 10)
	if err != nil {
		return fmt.Errorf("resuming member: %w", err)
	}
	for _, r := range later {
		if string(r.Value) < "40" || len(r.Value) != 2 {
			return fmt.Errorf("the resuming member read %s again: committed offsets were not used", r.Value)
		}
	}
	return nil
}

// transactions: a committed and an aborted transaction; read_committed sees only the committed records.
func transactions(ctx context.Context) error {
	admin, adm := newAdmin()
	defer admin.Close()
	topic := name("txn")
	if err := createTopic(ctx, adm, 1, topic, nil); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	producer := newClient(kgo.TransactionalID(name("txn")), kgo.DefaultProduceTopic(topic))
	defer producer.Close()
	for _, run := range []struct {
		prefix string
		end    kgo.TransactionEndTry
	}{{"c", kgo.TryCommit}, {"a", kgo.TryAbort}, {"d", kgo.TryCommit}} {
		if err := producer.BeginTransaction(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		for i := 0; i < 3; i++ {
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%s%d", run.prefix, i))}).FirstErr(); err != nil {
				return fmt.Errorf("produce %s: %w", run.prefix, err)
			}
		}
		if err := producer.EndTransaction(ctx, run.end); err != nil {
			return fmt.Errorf("end %s: %w", run.prefix, err)
		}
	}
	for _, isolation := range []struct {
		level kgo.IsolationLevel
		want  string
	}{{kgo.ReadCommitted(), "c0 c1 c2 d0 d1 d2"}, {kgo.ReadUncommitted(), "c0 c1 c2 a0 a1 a2 d0 d1 d2"}} {
		consumer := newClient(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(isolation.level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got, err := consume(ctx, consumer, len(strings.Fields(isolation.want)))
		consumer.Close()
		if err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		values := make([]string, 0, len(got))
		for _, r := range got {
			values = append(values, string(r.Value))
		}
		if strings.Join(values, " ") != isolation.want {
			return fmt.Errorf("read %q, want %q", strings.Join(values, " "), isolation.want)
		}
	}
	return nil
}

// acls: alice may not write until granted WRITE on a prefix (then also producing idempotently: KIP-679), and may
// not read without READ.
func acls(ctx context.Context) error {
	admin := saslClient("admin")
	defer admin.Close()
	adm := kadm.NewClient(admin)
	topic := name("acl-topic")
	if err := createTopic(ctx, adm, 1, topic, nil); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	alice := saslClient("alice", kgo.DefaultProduceTopic(topic))
	defer alice.Close()
	if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("denied")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		return fmt.Errorf("produce without WRITE: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	grant := kadm.NewACLs().Allow("User:alice").Topics(name("acl-")).ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpWrite)
	created, err := adm.CreateACLs(ctx, grant)
	if err != nil || len(created) != 1 || created[0].Err != nil {
		return fmt.Errorf("create ACL: %v %+v", err, created)
	}
	listed, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics(name("acl-")).ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpAny).Allow().AllowHosts())
	if err != nil || len(listed) != 1 || len(listed[0].Described) != 1 {
		return fmt.Errorf("describe ACLs: %v %+v", err, listed)
	}
	writer := saslClient("alice", kgo.DefaultProduceTopic(topic)) // a new client: the first one gave up its producer id
	defer writer.Close()
	if err := writer.ProduceSync(ctx, &kgo.Record{Value: []byte("allowed")}).FirstErr(); err != nil {
		return fmt.Errorf("idempotent produce with WRITE on the prefix: %w", err)
	}
	reader := saslClient("alice", kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer reader.Close()
	pollCtx, cancel := context.WithTimeout(ctx, peer.Patience)
	defer cancel()
	for {
		fetches := reader.PollFetches(pollCtx)
		if pollCtx.Err() != nil {
			return fmt.Errorf("reading without READ: no error within %s", peer.Patience)
		}
		if err := fetches.Err(); err != nil {
			if !errors.Is(err, kerr.TopicAuthorizationFailed) {
				return fmt.Errorf("reading without READ: %v, want TOPIC_AUTHORIZATION_FAILED", err)
			}
			break
		}
		if len(fetches.Records()) > 0 {
			return fmt.Errorf("alice read records without READ")
		}
	}
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics(name("acl-")).
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite).AllowHosts())
	if err != nil || len(deleted) != 1 || len(deleted[0].Deleted) != 1 {
		return fmt.Errorf("delete ACL: %v %+v", err, deleted)
	}
	return nil
}
