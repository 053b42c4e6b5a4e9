// A KafkaShareConsumer (kafka-clients 4.3) behind kwire's JSON-lines driver protocol
// (docs/driver-protocol.md, op "share_consumer"; kwire/conformance/clients/share.py).
// Usage: java -cp '<jars>/*:<classes>' ShareDriver.java < commands  (classes: the compiled KwireJavaClient)
// The first line is {"op": "describe"} or {"op": "share_consumer", "bootstrap", "group_id",
// "ack_mode", "config"}; then one command per line, each ending with {"event":"ok","op"} or
// {"event":"failed","op","error","message"}. EOF or {"op":"close"} closes the consumer.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareDriver {
    // The JSON of the driver protocol is KwireJavaClient's (compiled by tools/install_clients.sh and
    // on the class path), so both Java drivers read and write it one way.
    static final class Json {
        static Object parse(String text) { return KwireJavaClient.Json.parse(text); }
        static String write(Object o) { return KwireJavaClient.Json.write(o); }
    }

    static String hex(byte[] b) {
        if (b == null) return null;
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) sb.append(Character.forDigit((x >> 4) & 0xF, 16)).append(Character.forDigit(x & 0xF, 16));
        return sb.toString();
    }

    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        System.out.println(Json.write(m));
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String first = in.readLine();
        if (first == null) return;
        @SuppressWarnings("unchecked")
        Map<String, Object> start = (Map<String, Object>) Json.parse(first);
        String op = String.valueOf(start.get("op"));
        if (op.equals("describe")) {
            emit("event", "describe", "name", "java", "version", org.apache.kafka.common.utils.AppInfoParser.getVersion(),
                 "ops", List.of("share_consumer"),
                 "features", List.of("share_consumer", "share_implicit", "share_renew", "share_commit_async",
                                     "share_lock_timeout"));
            emit("event", "done");
            System.exit(0);
        }
        if (!op.equals("share_consumer")) {
            emit("event", "error", "error", "unsupported", "message", "op " + op + " is not implemented");
            System.exit(1);
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", String.valueOf(start.get("bootstrap")));
        p.put("group.id", String.valueOf(start.get("group_id")));
        p.put("share.acknowledgement.mode", String.valueOf(start.getOrDefault("ack_mode", "explicit")));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        Object cfg = start.get("config");
        if (cfg instanceof Map<?, ?> m) for (Map.Entry<?, ?> e : m.entrySet()) p.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
        Map<String, ConsumerRecord<byte[], byte[]>> held = new HashMap<>();
        KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p);
        c.setAcknowledgementCommitCallback((offsets, exc) -> {
            for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet()) {
                emit("event", "async_committed", "topic", e.getKey().topic(), "partition", e.getKey().partition(),
                     "offsets", new ArrayList<>(new TreeSet<>(e.getValue())),
                     "error", exc == null ? null : exc.getClass().getSimpleName());
            }
        });
        emit("event", "ready");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            @SuppressWarnings("unchecked")
            Map<String, Object> cmd = (Map<String, Object>) Json.parse(line);
            String name = String.valueOf(cmd.get("op"));
            if (name.equals("close") || name.equals("stop")) break;
            try {
                Map<String, Object> ok = new LinkedHashMap<>();
                switch (name) {
                    case "subscribe" -> {
                        List<String> topics = new ArrayList<>();
                        for (Object t : (List<?>) cmd.get("topics")) topics.add(String.valueOf(t));
                        c.subscribe(topics);
                    }
                    case "poll" -> {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(((Number) cmd.get("timeout_ms")).longValue()))) {
                            held.put(r.topic() + ":" + r.partition() + ":" + r.offset(), r);
                            List<Object> headers = new ArrayList<>();
                            for (Header h : r.headers()) headers.add(Arrays.asList(h.key(), hex(h.value())));
                            emit("event", "share_record", "topic", r.topic(), "partition", r.partition(), "offset", r.offset(),
                                 "key", hex(r.key()), "value", hex(r.value()), "headers", headers,
                                 "delivery_count", r.deliveryCount().map(x -> (Object) x.intValue()).orElse(null));
                        }
                        ok.put("acquisition_lock_timeout_ms", c.acquisitionLockTimeoutMs().map(x -> (Object) x).orElse(null));
                    }
                    case "acknowledge" -> {
                        String k = cmd.get("topic") + ":" + cmd.get("partition") + ":" + cmd.get("offset");
                        ConsumerRecord<byte[], byte[]> r = held.get(k);
                        if (r == null) throw new IllegalStateException("no record " + k + " was delivered");
                        c.acknowledge(r, AcknowledgeType.valueOf(String.valueOf(cmd.get("type"))));
                    }
                    case "commit" -> {
                        for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : c.commitSync().entrySet()) {
                            emit("event", "committed", "topic", e.getKey().topic(), "partition", e.getKey().partition(),
                                 "error", e.getValue().map(x -> (Object) x.getClass().getSimpleName()).orElse(null),
                                 "message", e.getValue().map(x -> (Object) String.valueOf(x.getMessage())).orElse(null));
                        }
                    }
                    case "commit_async" -> c.commitAsync();
                    case "lock_timeout" -> emit("event", "lock_timeout", "ms",
                                                c.acquisitionLockTimeoutMs().map(x -> (Object) x).orElse(null));
                    default -> throw new IllegalArgumentException("unknown op " + name);
                }
                Map<String, Object> done = new LinkedHashMap<>();
                done.put("event", "ok");
                done.put("op", name);
                done.putAll(ok);
                synchronized (ShareDriver.class) {
                    System.out.println(Json.write(done));
                    System.out.flush();
                }
            } catch (Exception e) {
                emit("event", "failed", "op", name, "error", e.getClass().getSimpleName(),
                     "message", String.valueOf(e.getMessage()));
            }
        }
        try {
            c.close();
            emit("event", "closed");
        } catch (Exception e) {
            emit("event", "failed", "op", "close", "error", e.getClass().getSimpleName(), "message", String.valueOf(e.getMessage()));
            emit("event", "closed");
        }
        System.exit(0);
    }
}
