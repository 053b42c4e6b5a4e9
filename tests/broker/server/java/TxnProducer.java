// The Java KafkaProducer's transactions (kafka-clients 4.3) against a broker: one committed and one
// aborted transaction on topic "t". Usage: java TxnProducer.java BOOTSTRAP TRANSACTIONAL_ID
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnProducer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("transactional.id", args[1]);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("t", 0, "k", "committed-1"));
            producer.send(new ProducerRecord<>("t", 1, "k", "committed-2"));
            producer.commitTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("t", 0, "k", "aborted")).get();
            producer.abortTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("t", 0, "k", "committed-3"));
            producer.commitTransaction();
        }
        System.out.println("done");
    }
}
