// Command sarama runs one scenario of IBM/sarama against a broker at a given protocol version, as a Go service
// would use the client, and exits 0 when the client saw what Apache Kafka gives it; otherwise it prints what
// differed and exits 1.
//
//	sarama -scenario NAME -bootstrap HOST:PORT [-version 2.8.0] [-name PREFIX]
//
// -bootstrap is a PLAINTEXT listener whose principal may do anything. -version is sarama's Config.Version: the
// protocol versions it sends (and below 0.11, the magic 0/1 message formats). tests/clients/test_go_clients.py
// starts kafka-shim and runs each scenario.
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

	"github.com/IBM/sarama"

	"github.com/kafka-shim/go-peers/peer"
)

var (
	scenario  = peer.Scenario
	bootstrap = peer.Bootstrap
	version   = flag.String("version", sarama.DefaultVersion.String(), "sarama's Config.Version")
	prefix    = flag.String("name", "go-sarama", "prefix of the topics, groups and transactional ids made")
)

var scenarios = map[string]func(ctx context.Context) error{
	"produce-consume": produceConsume,
	"consumer-group":  consumerGroup,
	"admin":           admin,
	"transactions":    transactions,
}

func main() {
	flag.Parse()
	peer.Run(scenarios, *scenario, fmt.Sprintf("%s at %s", *scenario, *version))
}

func name(s string) string {
	return fmt.Sprintf("%s-%s-%s", *prefix, strings.ReplaceAll(*version, ".", "_"), s)
}

func config() *sarama.Config {
	v, err := sarama.ParseKafkaVersion(*version)
	if err != nil {
		panic(err)
	}
	c := sarama.NewConfig()
	c.Version = v
	c.ClientID = "sarama-peer"
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Metadata.Retry.Max = 30
	c.Metadata.Retry.Backoff = 200 * time.Millisecond
	return c
}

// createTopic makes a topic at sarama's default version (CreateTopics is newer than the oldest versions tested).
func createTopic(topic string, partitions int32, configs map[string]*string) error {
	c := config()
	c.Version = sarama.DefaultVersion
	adm, err := sarama.NewClusterAdmin([]string{*bootstrap}, c)
	if err != nil {
		return err
	}
	defer adm.Close()
	return adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs}, false)
}

// codec is the newest compression this version allows (lz4 from 0.10, zstd from 2.1; snappy before).
func codec(v sarama.KafkaVersion) sarama.CompressionCodec {
	switch {
	case v.IsAtLeast(sarama.V2_1_0_0):
		return sarama.CompressionZSTD
	case v.IsAtLeast(sarama.V0_10_0_0):
		return sarama.CompressionLZ4
	default:
		return sarama.CompressionSnappy
	}
}

// produceConsume: a synchronous producer with the version's codec and acks=all, keys spread over partitions, read
// back by a partition consumer from the oldest offset.
func produceConsume(ctx context.Context) error {
	topic := name("data")
	if err := createTopic(topic, 2, nil); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	c := config()
	c.Producer.Compression = codec(c.Version)
	producer, err := sarama.NewSyncProducer([]string{*bootstrap}, c)
	if err != nil {
		return err
	}
	var sent []string
	var messages []*sarama.ProducerMessage
	for i := 0; i < 60; i++ {
		key, value := fmt.Sprintf("k%d", i%5), strings.Repeat(fmt.Sprint(i), 1+i%30)
		messages = append(messages, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(value)})
	}
	err = producer.SendMessages(messages)
	producer.Close()
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	for _, m := range messages {
		key, _ := m.Key.Encode()
		value, _ := m.Value.Encode()
		sent = append(sent, fmt.Sprintf("%d@%d %s=%s", m.Partition, m.Offset, key, value))
	}
	consumer, err := sarama.NewConsumer([]string{*bootstrap}, config())
	if err != nil {
		return err
	}
	defer consumer.Close()
	var got []string
	for partition := int32(0); partition < 2; partition++ {
		pc, err := consumer.ConsumePartition(topic, partition, sarama.OffsetOldest)
		if err != nil {
			return fmt.Errorf("consume partition %d: %w", partition, err)
		}
		want := 0
		for _, m := range messages {
			if m.Partition == partition {
				want++
			}
		}
		for n := 0; n < want; n++ {
			select {
			case m := <-pc.Messages():
				got = append(got, fmt.Sprintf("%d@%d %s=%s", m.Partition, m.Offset, m.Key, m.Value))
			case err := <-pc.Errors():
				pc.Close()
				return fmt.Errorf("consume partition %d: %w", partition, err)
			case <-time.After(peer.Patience):
				pc.Close()
				return fmt.Errorf("partition %d: %d of %d messages", partition, n, want)
			}
		}
		pc.Close()
	}
	sort.Strings(sent)
	sort.Strings(got)
	if strings.Join(sent, "\n") != strings.Join(got, "\n") {
		return fmt.Errorf("read back differs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sent, "\n"))
	}
	return nil
}

type handler struct {
	mu     sync.Mutex
	claims map[string][]int32
	values []string
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	h.claims = s.Claims()
	h.mu.Unlock()
	return nil
}

func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.mu.Lock()
		h.values = append(h.values, string(m.Value))
		h.mu.Unlock()
		s.MarkMessage(m, "")
		s.Commit()
	}
	return nil
}

func (h *handler) state() (int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ps := range h.claims {
		n += len(ps)
	}
	return n, append([]string(nil), h.values...)
}

// consumerGroup: two members of one group (range) hold two partitions each and together read everything; after
// they leave, a new member resumes from the committed offsets.
func consumerGroup(ctx context.Context) error {
	topic, group := name("group"), name("group")
	if err := createTopic(topic, 4, nil); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	produce := func(from, to int) error { // each message to the next partition in turn
		c := config()
		c.Producer.Partitioner = sarama.NewManualPartitioner
		producer, err := sarama.NewSyncProducer([]string{*bootstrap}, c)
		if err != nil {
			return err
		}
		defer producer.Close()
		var ms []*sarama.ProducerMessage
		for i := from; i < to; i++ {
			ms = append(ms, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 4), Value: sarama.StringEncoder(fmt.Sprint(i))})
		}
		return producer.SendMessages(ms)
	}
	if err := produce(0, 40); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	join := func(runCtx context.Context, h *handler) (sarama.ConsumerGroup, error) {
		c := config()
		c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
		c.Consumer.Offsets.AutoCommit.Enable = false
		g, err := sarama.NewConsumerGroup([]string{*bootstrap}, group, c)
		if err != nil {
			return nil, err
		}
		go func() {
			for runCtx.Err() == nil {
				if err := g.Consume(runCtx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
		return g, nil
	}
	runCtx, stop := context.WithCancel(ctx)
	first, second := &handler{}, &handler{}
	g1, err := join(runCtx, first)
	if err != nil {
		stop()
		return err
	}
	g2, err := join(runCtx, second)
	if err != nil {
		stop()
		g1.Close()
		return err
	}
	err = peer.WaitUntil(ctx, func() bool {
		n1, v1 := first.state()
		n2, v2 := second.state()
		return n1 == 2 && n2 == 2 && len(distinct(append(v1, v2...))) == 40
	})
	n1, v1 := first.state()
	n2, v2 := second.state()
	stop()
	g1.Close()
	g2.Close()
	if err != nil {
		return fmt.Errorf("the members held %d and %d partitions and read %d distinct values", n1, n2, len(distinct(append(v1, v2...))))
	}
	if err := produce(40, 48); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	laterCtx, stopLater := context.WithCancel(ctx)
	defer stopLater()
	third := &handler{}
	g3, err := join(laterCtx, third)
	if err != nil {
		return err
	}
	defer g3.Close()
	if err := peer.WaitUntil(ctx, func() bool { _, v := third.state(); return len(v) >= 8 }); err != nil {
		_, v := third.state()
		return fmt.Errorf("the resuming member read %v", v)
	}
	_, later := third.state()
	for _, v := range later {
		if len(v) != 2 || v < "40" {
			return fmt.Errorf("the resuming member read %s again: committed offsets were not used", v)
		}
	}
	return nil
}

func distinct(values []string) map[string]bool {
	out := map[string]bool{}
	for _, v := range values {
		out[v] = true
	}
	return out
}

// admin: a topic with a config, described, grown, listed and deleted through ClusterAdmin.
func admin(ctx context.Context) error {
	adm, err := sarama.NewClusterAdmin([]string{*bootstrap}, config())
	if err != nil {
		return err
	}
	defer adm.Close()
	topic := name("admin")
	retention := "7200000"
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false)
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create again: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		return fmt.Errorf("describe config: %w", err)
	}
	found := false
	for _, e := range entries {
		if e.Name == "retention.ms" && e.Value == retention {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("retention.ms %s not described: %+v", retention, entries)
	}
	if err := adm.CreatePartitions(topic, 3, nil, false); err != nil {
		return fmt.Errorf("create partitions: %w", err)
	}
	if err := peer.WaitUntil(ctx, func() bool {
		described, err := adm.DescribeTopics([]string{topic})
		return err == nil && len(described) == 1 && len(described[0].Partitions) == 3
	}); err != nil {
		return fmt.Errorf("the topic never described 3 partitions")
	}
	if err := adm.DeleteTopic(topic); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return peer.WaitUntil(ctx, func() bool {
		topics, err := adm.ListTopics()
		_, listed := topics[topic]
		return err == nil && !listed
	})
}

// transactions: committed, aborted and committed again; ReadCommitted sees the committed messages only.
func transactions(ctx context.Context) error {
	topic := name("txn")
	if err := createTopic(topic, 1, nil); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	c := config()
	c.Producer.Idempotent = true
	c.Producer.Transaction.ID = name("txn")
	c.Net.MaxOpenRequests = 1
	producer, err := sarama.NewSyncProducer([]string{*bootstrap}, c)
	if err != nil {
		return fmt.Errorf("transactional producer: %w", err)
	}
	defer producer.Close()
	for _, run := range []struct {
		prefix string
		commit bool
	}{{"c", true}, {"a", false}, {"d", true}} {
		if err := producer.BeginTxn(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		for i := 0; i < 3; i++ {
			if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("%s%d", run.prefix, i))}); err != nil {
				return fmt.Errorf("produce %s: %w", run.prefix, err)
			}
		}
		end := producer.CommitTxn
		if !run.commit {
			end = producer.AbortTxn
		}
		if err := end(); err != nil {
			return fmt.Errorf("end %s: %w", run.prefix, err)
		}
	}
	for _, isolation := range []struct {
		level sarama.IsolationLevel
		want  string
	}{{sarama.ReadCommitted, "c0 c1 c2 d0 d1 d2"}, {sarama.ReadUncommitted, "c0 c1 c2 a0 a1 a2 d0 d1 d2"}} {
		cc := config()
		cc.Consumer.IsolationLevel = isolation.level
		consumer, err := sarama.NewConsumer([]string{*bootstrap}, cc)
		if err != nil {
			return err
		}
		pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
		if err != nil {
			consumer.Close()
			return err
		}
		var got []string
		for len(got) < len(strings.Fields(isolation.want)) {
			select {
			case m := <-pc.Messages():
				got = append(got, string(m.Value))
			case err := <-pc.Errors():
				got = append(got, "error:"+err.Error())
			case <-time.After(peer.Patience):
				got = append(got, "timed out")
			}
		}
		pc.Close()
		consumer.Close()
		if strings.Join(got, " ") != isolation.want {
			return fmt.Errorf("read %q, want %q", strings.Join(got, " "), isolation.want)
		}
	}
	return nil
}
