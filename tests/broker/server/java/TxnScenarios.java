// The Java KafkaProducer's transactions (kafka-clients 4.3) in three scenarios against a broker.
// Usage: java TxnScenarios.java eos|zombie|timeout BOOTSTRAP
//   eos:     consume 5 records of "in" (group "eos-g", read_committed), write each upper-cased to
//            "out" in one transaction with sendOffsetsToTransaction, commit; prints "done"
//   zombie:  two producers with one transactional.id; the second's init fences the first, whose
//            commit then fails; prints "fenced <exception class>"
//   timeout: begins, sends, prints "sent", waits for a stdin line (the test moves the broker clock
//            past transaction.timeout.ms), then tries to commit; prints "commit failed <class>"
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnScenarios {
    static Properties producerProps(String bootstrap, String tid) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", tid);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return p;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[1];
        switch (args[0]) {
            case "eos": eos(bootstrap); break;
            case "zombie": zombie(bootstrap); break;
            case "timeout": timeout(bootstrap); break;
            default: throw new IllegalArgumentException(args[0]);
        }
        System.out.flush();
        System.exit(0);
    }

    static void eos(String bootstrap) throws Exception {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", "eos-g");
        c.put("isolation.level", "read_committed");
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
             KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap, "eos-tx"))) {
            producer.initTransactions();
            consumer.subscribe(List.of("in"));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 30000;
            producer.beginTransaction();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            while (seen < 5 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    producer.send(new ProducerRecord<>("out", r.partition(), r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    seen++;
                }
            }
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            producer.commitTransaction();
            System.out.println("done " + seen);
        }
    }

    static void zombie(String bootstrap) throws Exception {
        KafkaProducer<String, String> first = new KafkaProducer<>(producerProps(bootstrap, "same"));
        first.initTransactions();
        first.beginTransaction();
        first.send(new ProducerRecord<>("t", 0, "k", "zombie")).get();
        try (KafkaProducer<String, String> second = new KafkaProducer<>(producerProps(bootstrap, "same"))) {
            second.initTransactions();
            second.beginTransaction();
            second.send(new ProducerRecord<>("t", 0, "k", "fresh"));
            second.commitTransaction();
        }
        try {
            first.send(new ProducerRecord<>("t", 1, "k", "zombie-2")).get();
            first.commitTransaction();
            System.out.println("not fenced");
        } catch (Exception e) {
            System.out.println("fenced " + rootCause(e));
        }
        first.close(Duration.ZERO);
    }

    // The simple class name of the innermost cause (what the test asserts on).
    static String rootCause(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        return root.getClass().getSimpleName();
    }

    static void timeout(String bootstrap) throws Exception {
        Properties p = producerProps(bootstrap, "slow");
        p.put("transaction.timeout.ms", "10000");
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        producer.beginTransaction();
        producer.send(new ProducerRecord<>("t", 0, "k", "late")).get();
        System.out.println("sent");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        try {
            producer.commitTransaction();
            System.out.println("committed");
        } catch (Exception e) {
            System.out.println("commit failed " + rootCause(e));
        }
        producer.close(Duration.ZERO);
    }
}
