// A KafkaShareConsumer (kafka-clients 4.3) behind kwire's JSON-lines driver protocol
// (docs/driver-protocol.md, op "share_consumer"; kwire/conformance/clients/share.py).
// Usage: java -cp '<jars>' ShareDriver.java < commands
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
                            for (Header h : r.headers()) headers.add(Arrays.asList(h.key(), Json.hex(h.value())));
                            emit("event", "share_record", "topic", r.topic(), "partition", r.partition(), "offset", r.offset(),
                                 "key", Json.hex(r.key()), "value", Json.hex(r.value()), "headers", headers,
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

/** Just enough JSON: objects, arrays, strings, numbers, true/false/null (no library on the classpath). */
final class Json {
    private final String s;
    private int i;

    private Json(String s) { this.s = s; }

    static String hex(byte[] b) {
        if (b == null) return null;
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) sb.append(Character.forDigit((x >> 4) & 0xF, 16)).append(Character.forDigit(x & 0xF, 16));
        return sb.toString();
    }

    static Object parse(String text) {
        Json j = new Json(text);
        Object v = j.value();
        j.ws();
        if (j.i != text.length()) throw new IllegalArgumentException("trailing JSON at " + j.i);
        return v;
    }

    private void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }

    private Object value() {
        ws();
        char c = s.charAt(i);
        if (c == '{') {
            Map<String, Object> m = new LinkedHashMap<>();
            i++; ws();
            if (s.charAt(i) == '}') { i++; return m; }
            while (true) {
                ws(); String k = string(); ws(); expect(':');
                m.put(k, value()); ws();
                if (s.charAt(i) == ',') { i++; continue; }
                expect('}'); return m;
            }
        }
        if (c == '[') {
            List<Object> l = new ArrayList<>();
            i++; ws();
            if (s.charAt(i) == ']') { i++; return l; }
            while (true) {
                l.add(value()); ws();
                if (s.charAt(i) == ',') { i++; continue; }
                expect(']'); return l;
            }
        }
        if (c == '"') return string();
        if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
        if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
        if (s.startsWith("null", i)) { i += 4; return null; }
        int start = i;
        while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
        String n = s.substring(start, i);
        if (n.isEmpty()) throw new IllegalArgumentException("bad JSON at " + start);
        if (n.contains(".") || n.contains("e") || n.contains("E")) return Double.parseDouble(n);
        return Long.parseLong(n);
    }

    private void expect(char c) {
        if (s.charAt(i) != c) throw new IllegalArgumentException("expected " + c + " at " + i);
        i++;
    }

    private String string() {
        expect('"');
        StringBuilder sb = new StringBuilder();
        while (true) {
            char c = s.charAt(i++);
            if (c == '"') return sb.toString();
            if (c != '\\') { sb.append(c); continue; }
            char e = s.charAt(i++);
            switch (e) {
                case 'n': sb.append('\n'); break;
                case 't': sb.append('\t'); break;
                case 'r': sb.append('\r'); break;
                case 'b': sb.append('\b'); break;
                case 'f': sb.append('\f'); break;
                case 'u': sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                default: sb.append(e);
            }
        }
    }

    static String write(Object o) {
        StringBuilder sb = new StringBuilder();
        write(sb, o);
        return sb.toString();
    }

    @SuppressWarnings("unchecked")
    private static void write(StringBuilder sb, Object o) {
        if (o == null) { sb.append("null"); return; }
        if (o instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : ((Map<String, Object>) o).entrySet()) {
                if (!first) sb.append(',');
                first = false;
                write(sb, e.getKey()); sb.append(':'); write(sb, e.getValue());
            }
            sb.append('}');
            return;
        }
        if (o instanceof Collection) {
            sb.append('[');
            boolean first = true;
            for (Object x : (Collection<Object>) o) {
                if (!first) sb.append(',');
                first = false;
                write(sb, x);
            }
            sb.append(']');
            return;
        }
        if (o instanceof Number || o instanceof Boolean) { sb.append(o); return; }
        String str = o.toString();
        sb.append('"');
        for (int k = 0; k < str.length(); k++) {
            char ch = str.charAt(k);
            if (ch == '"' || ch == '\\') sb.append('\\').append(ch);
            else if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
            else sb.append(ch);
        }
        sb.append('"');
    }
}
