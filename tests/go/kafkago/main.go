// Command kafkago runs one scenario of segmentio/kafka-go against a broker, as a Go service would use the client,
// and exits 0 when the client saw what Apache Kafka 3.9 gives it; otherwise it prints what differed and exits 1.
//
//	kafkago -scenario NAME -bootstrap HOST:PORT [-sasl HOST:PORT] [-name PREFIX]
//
// kafka-go speaks the protocol with its own code (neither librdkafka nor the Java client), at versions of its own
// choosing: its Writer and Client on the protocol package, its Conn on older versions (Produce v2-v3, Metadata v1).
// -bootstrap is a PLAINTEXT listener whose principal may do anything; -sasl a SASL_PLAINTEXT listener with the users
// admin/admin-secret (a super user) and alice/alice-secret (no rights of her own) over PLAIN and SCRAM-SHA-256/512.
// The expected answers are Kafka 3.9's, seen by running each scenario against scripts/real-kafka.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/kafka-shim/go-peers/peer"
)

var (
	scenario  = peer.Scenario
	bootstrap = peer.Bootstrap
	saslAddr  = peer.SASL
	prefix    = flag.String("name", "go-kafkago", "prefix of the topics and groups made")
)

var scenarios = map[string]func(ctx context.Context) error{
	"produce-read":   produceRead,
	"conn":           connScenario,
	"consumer-group": consumerGroup,
	"admin":          admin,
	"acls":           acls,
}

func main() {
	flag.Parse()
	peer.Run(scenarios, *scenario, *scenario)
}

func name(s string) string { return *prefix + "-" + s }

func client(addr string, mech sasl.Mechanism) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(addr), Timeout: peer.Patience, Transport: &kafka.Transport{SASL: mech}}
}

// createTopics creates the topics and fails on any error the broker gives one of them.
func createTopics(ctx context.Context, topics ...kafka.TopicConfig) error {
	resp, err := client(*bootstrap, nil).CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: topics})
	if err != nil {
		return err
	}
	for topic, err := range resp.Errors {
		if err != nil {
			return fmt.Errorf("creating %s: %w", topic, err)
		}
	}
	return nil
}

// code is the Kafka error code err carries (0 for nil, -2 for an error that is not a broker's answer).
func code(err error) int {
	if err == nil {
		return 0
	}
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		return int(kerr)
	}
	var writeErrs kafka.WriteErrors
	if errors.As(err, &writeErrs) {
		for _, e := range writeErrs {
			if e != nil {
				return code(e)
			}
		}
	}
	return -2
}

func expectCode(what string, err error, want int) error {
	if got := code(err); got != want {
		return fmt.Errorf("%s: error %v (code %d), Kafka answers %d", what, err, got, want)
	}
	return nil
}

// produceRead: the Writer with every codec at acks all, one and none, keyed messages with headers spread by key, all
// read back partition by partition; a keyless record to a compacted topic is refused (87), an absent topic is 3.
func produceRead(ctx context.Context) error {
	topic, compacted := name("records"), name("compacted")
	if err := createTopics(ctx, kafka.TopicConfig{Topic: topic, NumPartitions: 3, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: compacted, NumPartitions: 1, ReplicationFactor: 1,
			ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}}); err != nil {
		return err
	}
	want := map[string]bool{}
	codecs := []compress.Compression{0, compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd}
	for _, codec := range codecs {
		for _, acks := range []kafka.RequiredAcks{kafka.RequireAll, kafka.RequireOne, kafka.RequireNone} {
			w := &kafka.Writer{Addr: kafka.TCP(*bootstrap), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: acks,
				Compression: codec, BatchTimeout: 5 * time.Millisecond}
			var msgs []kafka.Message
			for j := 0; j < 20; j++ {
				value := strings.Repeat(fmt.Sprintf("%s-%d-%d ", codec, acks, j), 8)
				want[value] = true
				msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%d", j)), Value: []byte(value),
					Headers: []kafka.Header{{Key: "codec", Value: []byte(codec.String())}}})
			}
			err := w.WriteMessages(ctx, msgs...)
			w.Close()
			if err != nil {
				return fmt.Errorf("writing with %s at acks %d: %w", codec, acks, err)
			}
		}
	}
	got := map[string]bool{}
	for p := 0; p < 3; p++ {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{*bootstrap}, Topic: topic, Partition: p, MaxWait: 100 * time.Millisecond})
		last, err := r.ReadLag(ctx)
		if err != nil {
			r.Close()
			return err
		}
		for n := int64(0); n < last; n++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				return fmt.Errorf("partition %d, message %d of %d: %w", p, n, last, err)
			}
			if m.Offset != n || len(m.Headers) != 1 || m.Headers[0].Key != "codec" || !strings.HasPrefix(string(m.Value), string(m.Headers[0].Value)) {
				r.Close()
				return fmt.Errorf("partition %d: offset %d read as %d %q %v", p, n, m.Offset, m.Value, m.Headers)
			}
			if (&kafka.Hash{}).Balance(m, 0, 1, 2) != p {
				r.Close()
				return fmt.Errorf("key %s read from partition %d, hashed to another", m.Key, p)
			}
			got[string(m.Value)] = true
		}
		r.Close()
	}
	if len(got) != len(want) {
		return fmt.Errorf("read back %d of the %d values written", len(got), len(want))
	}
	w := &kafka.Writer{Addr: kafka.TCP(*bootstrap), Topic: compacted, RequiredAcks: kafka.RequireAll, MaxAttempts: 1}
	err := w.WriteMessages(ctx, kafka.Message{Value: []byte("no key")})
	w.Close()
	if err := expectCode("a keyless record to a compacted topic", err, 87); err != nil {
		return err
	}
	w = &kafka.Writer{Addr: kafka.TCP(*bootstrap), Topic: name("absent"), RequiredAcks: kafka.RequireAll, MaxAttempts: 2}
	err = w.WriteMessages(ctx, kafka.Message{Value: []byte("x")})
	w.Close()
	return expectCode("writing to an absent topic", err, 3)
}

// connScenario: kafka-go's Conn, on its older protocol versions: acks -1/1/0, a compressed batch per codec at
// consecutive offsets, offsets by time, and everything read back in one batch. (The Conn itself refuses acks 0.)
func connScenario(ctx context.Context) error {
	topic := name("conn")
	if err := createTopics(ctx, kafka.TopicConfig{Topic: topic, NumPartitions: 2, ReplicationFactor: 1}); err != nil {
		return err
	}
	conn, err := kafka.DialLeader(ctx, "tcp", *bootstrap, topic, 0)
	if err != nil {
		return err
	}
	defer conn.Close()
	var want []string
	for _, acks := range []int{-1, 1} {
		if err := conn.SetRequiredAcks(acks); err != nil {
			return err
		}
		value := fmt.Sprintf("acks %d", acks)
		if _, err := conn.WriteMessages(kafka.Message{Key: []byte("a"), Value: []byte(value)}, kafka.Message{Value: []byte("two")}); err != nil {
			return fmt.Errorf("%s: %w", value, err)
		}
		want = append(want, "a="+value, "=two")
	}
	if err := conn.SetRequiredAcks(-1); err != nil {
		return err
	}
	next := int64(4)
	for _, codec := range []compress.Compression{compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		_, partition, offset, _, err := conn.WriteCompressedMessagesAt(codec.Codec(),
			kafka.Message{Key: []byte("k"), Value: []byte("compressed " + codec.String())}, kafka.Message{Value: []byte("x")})
		if err != nil || partition != 0 || offset != next {
			return fmt.Errorf("a %s batch: partition %d offset %d (%v), Kafka gives partition 0 offset %d", codec, partition, offset, err, next)
		}
		next += 2
		want = append(want, "k=compressed "+codec.String(), "=x")
	}
	first, last, err := conn.ReadOffsets()
	if err != nil || first != 0 || last != next {
		return fmt.Errorf("offsets %d-%d (%v), Kafka gives 0-%d", first, last, err, next)
	}
	if o, err := conn.ReadOffset(time.Now().Add(-time.Hour)); err != nil || o != 0 {
		return fmt.Errorf("the offset an hour ago: %d (%v), Kafka gives 0", o, err)
	}
	if o, err := conn.ReadOffset(time.Now().Add(time.Hour)); err != nil || o != -1 {
		return fmt.Errorf("the offset in an hour: %d (%v), Kafka gives -1 (no record that late)", o, err)
	}
	if _, err := conn.Seek(0, kafka.SeekAbsolute); err != nil {
		return err
	}
	batch := conn.ReadBatch(1, 1<<20)
	var got []string
	for len(got) < len(want) {
		m, err := batch.ReadMessage()
		if err != nil {
			break
		}
		got = append(got, fmt.Sprintf("%s=%s", m.Key, m.Value))
	}
	if err := batch.Close(); err != nil {
		return err
	}
	if batch.HighWaterMark() != next || fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("read %v (high watermark %d), wrote %v", got, batch.HighWaterMark(), want)
	}
	partitions, err := conn.ReadPartitions(topic)
	if err != nil || len(partitions) != 2 {
		return fmt.Errorf("ReadPartitions: %v (%v), Kafka lists 2", partitions, err)
	}
	return nil
}

// consumerGroup: three Readers of one group share a topic's partitions with each of kafka-go's balancers, read every
// message once between them, and commit to the end; the group is Empty once they leave.
func consumerGroup(ctx context.Context) error {
	topic := name("group")
	if err := createTopics(ctx, kafka.TopicConfig{Topic: topic, NumPartitions: 4, ReplicationFactor: 1}); err != nil {
		return err
	}
	w := &kafka.Writer{Addr: kafka.TCP(*bootstrap), Topic: topic, RequiredAcks: kafka.RequireAll, Balancer: &kafka.RoundRobin{}, BatchTimeout: 5 * time.Millisecond}
	var msgs []kafka.Message
	for i := 0; i < 60; i++ {
		msgs = append(msgs, kafka.Message{Value: []byte(fmt.Sprintf("m%d", i))})
	}
	err := w.WriteMessages(ctx, msgs...)
	w.Close()
	if err != nil {
		return err
	}
	balancers := [][]kafka.GroupBalancer{{kafka.RangeGroupBalancer{}}, {kafka.RoundRobinGroupBalancer{}},
		{kafka.RackAffinityGroupBalancer{Rack: "r"}, kafka.RangeGroupBalancer{}}}
	for _, balancer := range balancers {
		if err := readAsGroup(ctx, topic, name("group-"+balancer[0].ProtocolName()), balancer, len(msgs)); err != nil {
			return fmt.Errorf("%s: %w", balancer[0].ProtocolName(), err)
		}
	}
	return nil
}

func readAsGroup(ctx context.Context, topic, group string, balancer []kafka.GroupBalancer, total int) error {
	var mu sync.Mutex
	seen := map[string]int{}
	members := map[int]bool{}
	readCtx, stop := context.WithCancel(ctx)
	defer stop()
	var readers []*kafka.Reader
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{*bootstrap}, GroupID: group, GroupTopics: []string{topic},
			GroupBalancers: balancer, MaxWait: 100 * time.Millisecond, StartOffset: kafka.FirstOffset,
			HeartbeatInterval: 300 * time.Millisecond, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second})
		readers = append(readers, r)
		wg.Add(1)
		go func(i int, r *kafka.Reader) {
			defer wg.Done()
			for {
				m, err := r.FetchMessage(readCtx)
				if err != nil {
					return
				}
				if err := r.CommitMessages(readCtx, m); err != nil {
					return
				}
				mu.Lock()
				seen[string(m.Value)]++
				members[i] = true
				mu.Unlock()
			}
		}(i, r)
	}
	err := peer.WaitUntil(ctx, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == total
	})
	stop()
	wg.Wait()
	for _, r := range readers {
		r.Close()
	}
	if err != nil {
		return fmt.Errorf("read %d of %d messages: %w", len(seen), total, err)
	}
	offsets, err := client(*bootstrap, nil).ConsumerOffsets(ctx, kafka.TopicAndGroup{Topic: topic, GroupId: group})
	if err != nil {
		return err
	}
	committed := int64(0)
	for _, o := range offsets {
		committed += o
	}
	if committed != int64(total) {
		return fmt.Errorf("committed offsets %v sum to %d, the members read %d", offsets, committed, total)
	}
	described, err := client(*bootstrap, nil).DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(described.Groups) != 1 || described.Groups[0].GroupState != "Empty" || len(described.Groups[0].Members) != 0 {
		return fmt.Errorf("the group after its members left: %+v (%v), Kafka describes it Empty", described, err)
	}
	return nil
}

// admin: kafka-go's Client for topics, partitions and configs, with the codes Kafka 3.9 answers.
func admin(ctx context.Context) error {
	c := client(*bootstrap, nil)
	main, compacted := name("admin"), name("admin-compacted")
	resp, err := c.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: main, NumPartitions: 3, ReplicationFactor: 1},
		{Topic: compacted, NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}},
		{Topic: name("admin-defaults"), NumPartitions: -1, ReplicationFactor: -1},
		{Topic: name("admin-rf3"), NumPartitions: 1, ReplicationFactor: 3},
		{Topic: name("admin-unknown-key"), NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{{ConfigName: "no.such", ConfigValue: "x"}}},
		{Topic: "bad name!", NumPartitions: 1, ReplicationFactor: 1},
		{Topic: name("admin-none"), NumPartitions: 0, ReplicationFactor: 1},
	}})
	if err != nil {
		return err
	}
	expected := map[string]int{main: 0, compacted: 0, name("admin-defaults"): 0, name("admin-rf3"): 38,
		name("admin-unknown-key"): 40, "bad name!": 17, name("admin-none"): 37}
	for topic, want := range expected {
		if err := expectCode("creating "+topic, resp.Errors[topic], want); err != nil {
			return err
		}
	}
	again, err := c.CreateTopics(ctx, &kafka.CreateTopicsRequest{ValidateOnly: true, Topics: []kafka.TopicConfig{{Topic: main, NumPartitions: 1, ReplicationFactor: 1}}})
	if err != nil {
		return err
	}
	if err := expectCode("creating an existing topic", again.Errors[main], 36); err != nil {
		return err
	}
	grown, err := c.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{
		{Name: main, Count: 5}, {Name: compacted, Count: 1}, {Name: name("absent"), Count: 2}}})
	if err != nil {
		return err
	}
	for topic, want := range map[string]int{main: 0, compacted: 37, name("absent"): 3} {
		if err := expectCode("adding partitions to "+topic, grown.Errors[topic], want); err != nil {
			return err
		}
	}
	altered, err := c.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: main, Configs: []kafka.IncrementalAlterConfigsRequestConfig{
			{Name: "retention.ms", Value: "12345"}, {Name: "cleanup.policy", Value: "compact", ConfigOperation: kafka.ConfigOperationAppend}}},
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: compacted, Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "retention.ms", Value: "abc"}}},
	}})
	if err != nil {
		return err
	}
	codes := map[string]int{}
	for _, r := range altered.Resources {
		codes[r.ResourceName] = code(r.Error)
	}
	if codes[main] != 0 || codes[compacted] != 40 {
		return fmt.Errorf("IncrementalAlterConfigs codes %v, Kafka answers 0 and 40 (an invalid value)", codes)
	}
	configs, err := c.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: main, ConfigNames: []string{"cleanup.policy", "retention.ms", "segment.bytes"}}}})
	if err != nil {
		return err
	}
	var values []string
	for _, entry := range configs.Resources[0].ConfigEntries {
		values = append(values, fmt.Sprintf("%s=%s/%d", entry.ConfigName, entry.ConfigValue, entry.ConfigSource))
	}
	sort.Strings(values)
	if want := "[cleanup.policy=delete,compact/1 retention.ms=12345/1 segment.bytes=1073741824/5]"; fmt.Sprint(values) != want {
		return fmt.Errorf("configs %v, Kafka describes %s", values, want)
	}
	fetched, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: name("no-such-group"), Topics: map[string][]int{main: {0}}})
	if err != nil || fetched.Topics[main][0].CommittedOffset != -1 || fetched.Topics[main][0].Error != nil {
		return fmt.Errorf("the offsets of a group never seen: %+v (%v), Kafka gives -1", fetched, err)
	}
	deleted, err := c.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{compacted, name("absent")}})
	if err != nil {
		return err
	}
	if code(deleted.Errors[compacted]) != 0 || code(deleted.Errors[name("absent")]) != 3 {
		return fmt.Errorf("DeleteTopics %v, Kafka answers 0 and 3", deleted.Errors)
	}
	return nil
}

// acls: the admin grants alice READ on one topic and its group by literal names and DESCRIBE by a prefix; alice over
// PLAIN and SCRAM sees only those topics, may read but not write, and a wrong password fails the login (58). (kafka-go's
// transport asks Metadata for every topic and answers a topic it did not get back with 3, as for an absent one.)
func acls(ctx context.Context) error {
	readable, hidden, group := name("acl-readable"), name("acl-hidden"), name("acl-group")
	if err := createTopics(ctx, kafka.TopicConfig{Topic: readable, NumPartitions: 1, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: hidden, NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		return err
	}
	w := &kafka.Writer{Addr: kafka.TCP(*bootstrap), Topic: readable, RequiredAcks: kafka.RequireAll}
	err := w.WriteMessages(ctx, kafka.Message{Value: []byte("for alice")})
	w.Close()
	if err != nil {
		return err
	}
	adm := client(*saslAddr, plain.Mechanism{Username: "admin", Password: "admin-secret"})
	grant := func(rtype kafka.ResourceType, resource string, pattern kafka.PatternType, op kafka.ACLOperationType) kafka.ACLEntry {
		return kafka.ACLEntry{ResourceType: rtype, ResourceName: resource, ResourcePatternType: pattern, Principal: "User:alice",
			Host: "*", Operation: op, PermissionType: kafka.ACLPermissionTypeAllow}
	}
	created, err := adm.CreateACLs(ctx, &kafka.CreateACLsRequest{ACLs: []kafka.ACLEntry{
		grant(kafka.ResourceTypeTopic, readable, kafka.PatternTypeLiteral, kafka.ACLOperationTypeRead),
		grant(kafka.ResourceTypeGroup, group, kafka.PatternTypeLiteral, kafka.ACLOperationTypeRead),
		grant(kafka.ResourceTypeTopic, name("acl-r"), kafka.PatternTypePrefixed, kafka.ACLOperationTypeDescribe),
	}})
	if err != nil {
		return err
	}
	for i, e := range created.Errors {
		if e != nil {
			return fmt.Errorf("creating ACL %d: %w", i, e)
		}
	}
	described, err := adm.DescribeACLs(ctx, &kafka.DescribeACLsRequest{Filter: kafka.ACLFilter{ResourceTypeFilter: kafka.ResourceTypeTopic,
		ResourceNameFilter: readable, ResourcePatternTypeFilter: kafka.PatternTypeMatch, Operation: kafka.ACLOperationTypeAny,
		PermissionType: kafka.ACLPermissionTypeAny}})
	if err != nil || described.Error != nil || len(described.Resources) != 2 {
		return fmt.Errorf("ACLs matching %s: %+v (%v), Kafka lists the literal and the prefixed pattern", readable, described, err)
	}
	for _, login := range []sasl.Mechanism{plain.Mechanism{Username: "alice", Password: "alice-secret"},
		mustScram(scram.SHA256, "alice", "alice-secret"), mustScram(scram.SHA512, "alice", "alice-secret")} {
		alice := client(*saslAddr, login)
		md, err := alice.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{readable, hidden}})
		if err != nil {
			return fmt.Errorf("%s: %w", login.Name(), err)
		}
		codes := map[string]int{}
		for _, t := range md.Topics {
			codes[t.Name] = code(t.Error)
		}
		if codes[readable] != 0 || codes[hidden] != 3 {
			return fmt.Errorf("%s: metadata codes %v, Kafka gives 0 for %s and 3 for %s", login.Name(), codes, readable, hidden)
		}
		all, err := alice.Metadata(ctx, &kafka.MetadataRequest{})
		if err != nil {
			return fmt.Errorf("%s: all topics as alice: %w", login.Name(), err)
		}
		listed := map[string]bool{}
		for _, t := range all.Topics {
			listed[t.Name] = true
		}
		if !listed[readable] || listed[hidden] {
			return fmt.Errorf("%s: all topics as alice: %v, Kafka lists %s and not %s", login.Name(), listed, readable, hidden)
		}
	}
	aliceWriter := &kafka.Writer{Addr: kafka.TCP(*saslAddr), Topic: readable, RequiredAcks: kafka.RequireAll, MaxAttempts: 1,
		Transport: &kafka.Transport{SASL: plain.Mechanism{Username: "alice", Password: "alice-secret"}}}
	err = aliceWriter.WriteMessages(ctx, kafka.Message{Value: []byte("alice may not write")})
	aliceWriter.Close()
	if err := expectCode("alice writing with READ only", err, 29); err != nil {
		return err
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{*saslAddr}, GroupID: group, Topic: readable, MaxWait: 100 * time.Millisecond,
		StartOffset: kafka.FirstOffset, Dialer: &kafka.Dialer{Timeout: peer.Patience, SASLMechanism: plain.Mechanism{Username: "alice", Password: "alice-secret"}}})
	m, err := r.ReadMessage(ctx)
	r.Close()
	if err != nil || string(m.Value) != "for alice" {
		return fmt.Errorf("alice reading as %s: %q (%v)", group, m.Value, err)
	}
	_, err = client(*saslAddr, plain.Mechanism{Username: "alice", Password: "wrong"}).Metadata(ctx, &kafka.MetadataRequest{})
	return expectCode("a wrong password", err, 58)
}

func mustScram(algorithm scram.Algorithm, user, password string) sasl.Mechanism {
	m, err := scram.Mechanism(algorithm, user, password)
	if err != nil {
		panic(err)
	}
	return m
}
