// A KafkaShareConsumer (kafka-clients 4.3) driven line by line over stdin, for kwire's share tests.
// Usage: java ShareDriver.java BOOTSTRAP GROUP implicit|explicit [key=value ...]
// Commands: subscribe TOPIC | poll MS | ack PARTITION OFFSET TYPE | commit | commitasync |
//           locktimeout | close. Every command ends with a line "ok" (or "error CLASS MESSAGE").
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareDriver {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("share.acknowledgement.mode", args[2]);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            p.put(kv[0], kv[1]);
        }
        Map<String, ConsumerRecord<String, String>> held = new HashMap<>();
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.setAcknowledgementCommitCallback((offsets, exc) -> {
                StringBuilder sb = new StringBuilder("async-committed");
                for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet()) {
                    sb.append(' ').append(e.getKey().partition()).append(':').append(new TreeSet<>(e.getValue()));
                }
                if (exc != null) sb.append(" error ").append(exc.getClass().getSimpleName());
                System.out.println(sb);
            });
            Scanner in = new Scanner(System.in);
            while (in.hasNextLine()) {
                String[] cmd = in.nextLine().trim().split(" ");
                try {
                    switch (cmd[0]) {
                        case "subscribe" -> c.subscribe(List.of(cmd[1]));
                        case "poll" -> {
                            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(Long.parseLong(cmd[1])))) {
                                held.put(r.partition() + ":" + r.offset(), r);
                                System.out.println("rec " + r.partition() + " " + r.offset() + " "
                                        + r.deliveryCount().orElse((short) -1) + " " + r.value());
                            }
                        }
                        case "ack" -> c.acknowledge(held.get(cmd[1] + ":" + cmd[2]), AcknowledgeType.valueOf(cmd[3]));
                        case "commit" -> {
                            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : c.commitSync().entrySet()) {
                                System.out.println("committed " + e.getKey().partition() + " "
                                        + e.getValue().map(x -> x.getClass().getSimpleName()).orElse("ok"));
                            }
                        }
                        case "commitasync" -> c.commitAsync();
                        case "locktimeout" -> System.out.println("lock " + c.acquisitionLockTimeoutMs().orElse(-1));
                        case "close" -> {
                            System.out.println("ok");
                            System.out.flush();
                            return;
                        }
                        default -> throw new IllegalArgumentException("unknown command " + cmd[0]);
                    }
                    System.out.println("ok");
                } catch (Exception e) {
                    System.out.println("error " + e.getClass().getSimpleName() + " " + String.valueOf(e.getMessage()).replace('\n', ' '));
                }
                System.out.flush();
            }
        }
    }
}
