// kwire conformance driver for the official Java client (kafka-clients 4.3.0).
//
// Protocol (shared by every kwire client program): the first stdin line is a JSON
// command {"op": "produce"|"consume"|"member", ...}; the program prints one JSON
// object per stdout line and ends a one-shot op with {"event":"done"}. Keys, values
// and header values travel as lowercase hex (null stays null) so binary data
// round-trips. A "member" keeps running, reads further commands ({"op":"stop"})
// from stdin and treats EOF as stop. Failures print {"event":"error",...}, exit 1.
//
// No JSON library is on the classpath (only the five jars the installer extracts),
// hence the small parser at the bottom.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KwireJavaClient {
    private static final String USAGE =
        "usage: java -cp '<jars>:<classes>' KwireJavaClient < command.json\n"
        + "  reads one JSON command line on stdin: op = produce | consume | member\n"
        + "  prints JSON lines; see kwire/conformance/clients/base.py for the fields\n";

    private static final LinkedBlockingQueue<Object> STDIN = new LinkedBlockingQueue<>();
    private static final Object EOF = new Object();

    public static void main(String[] args) throws Exception {
        for (String a : args) {
            if (a.equals("--help") || a.equals("-h")) {
                System.out.print(USAGE);
                return;
            }
            if (a.equals("--version")) {
                emit(obj("event", "version", "kafka_clients", org.apache.kafka.common.utils.AppInfoParser.getVersion()));
                return;
            }
        }
        // A daemon thread feeds stdin lines to a queue so loops can poll it without blocking.
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (!line.isBlank()) STDIN.put(line);
                }
            } catch (Exception ignored) {
                // EOF below covers a broken pipe too.
            }
            STDIN.add(EOF);
        });
        reader.setDaemon(true);
        reader.start();
        int rc = 0;
        try {
            Object first = STDIN.take();
            if (first == EOF) throw new IllegalArgumentException("no command on stdin");
            Map<String, Object> cmd = asMap(Json.parse((String) first));
            String op = str(cmd, "op", "");
            switch (op) {
                case "produce": produce(cmd); break;
                case "consume": consume(cmd); break;
                case "member": member(cmd); break;
                case "producer": producer(cmd); break;
                case "txn_producer": txnProducer(cmd); break;
                default: throw new IllegalArgumentException("unknown op " + op);
            }
        } catch (Throwable t) {
            t.printStackTrace();
            Throwable root = t;
            while (root.getCause() != null && root.getCause() != root) root = root.getCause();
            emit(obj("event", "error", "error", root.getClass().getSimpleName(), "message", String.valueOf(root.getMessage())));
            rc = 1;
        }
        System.out.flush();
        // Kafka's background threads are non-daemon; exit explicitly.
        System.exit(rc);
    }

    // ---- operations -------------------------------------------------------------------

    private static Properties producerProps(Map<String, Object> cmd) {
        long timeoutMs = num(cmd, "timeout_ms", 30000);
        Properties p = new Properties();
        p.put("bootstrap.servers", str(cmd, "bootstrap", null));
        p.put("client.id", "kwire-java-producer");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        String acks = String.valueOf(num(cmd, "acks", -1));
        p.put("acks", acks.equals("-1") ? "all" : acks);
        // Idempotence requires acks=all; let other acks values through.
        if (!acks.equals("-1")) p.put("enable.idempotence", "false");
        p.put("compression.type", str(cmd, "compression", "none"));
        p.put("max.block.ms", String.valueOf(timeoutMs));
        p.put("request.timeout.ms", String.valueOf(Math.min(timeoutMs, 30000)));
        p.put("delivery.timeout.ms", String.valueOf(Math.max(timeoutMs, Math.min(timeoutMs, 30000) + 10)));
        putExtra(p, cmd);
        return p;
    }

    private static ProducerRecord<byte[], byte[]> producerRecord(String topic, Map<String, Object> r) {
        RecordHeaders headers = new RecordHeaders();
        for (Object h : asList(r.getOrDefault("headers", List.of()))) {
            List<Object> pair = asList(h);
            headers.add((String) pair.get(0), unhex((String) pair.get(1)));
        }
        Object part = r.get("partition");
        Integer partition = part == null ? null : ((Number) part).intValue();
        return new ProducerRecord<>(topic, partition, null,
            unhex((String) r.get("key")), unhex((String) r.get("value")), headers);
    }

    private static void produce(Map<String, Object> cmd) throws Exception {
        long timeoutMs = num(cmd, "timeout_ms", 30000);
        String topic = str(cmd, "topic", null);
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps(cmd))) {
            for (Object o : asList(cmd.get("records"))) {
                futures.add(producer.send(producerRecord(topic, asMap(o))));
            }
            producer.flush();
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata md = f.get(timeoutMs, TimeUnit.MILLISECONDS);
                emit(obj("event", "produced", "partition", md.partition(), "offset", md.offset()));
            }
        }
        emit(obj("event", "done"));
    }

    // The next command before the deadline; null at the deadline, at the end of input or on "stop".
    private static Map<String, Object> nextCommand(long deadline) throws InterruptedException {
        while (System.currentTimeMillis() < deadline) {
            Object line = STDIN.poll(100, TimeUnit.MILLISECONDS);
            if (line == null) continue;
            if (line == EOF) return null;
            Map<String, Object> c = asMap(Json.parse((String) line));
            return str(c, "op", "").equals("stop") ? null : c;
        }
        return null;
    }

    // A long-lived producer: "send" lines add records, each acknowledged by its callback.
    private static void producer(Map<String, Object> cmd) throws InterruptedException {
        long deadline = System.currentTimeMillis() + num(cmd, "timeout_ms", 120000);
        String topic = str(cmd, "topic", null);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps(cmd))) {
            emit(obj("event", "ready"));
            for (Map<String, Object> c; (c = nextCommand(deadline)) != null; ) {
                for (Object o : asList(c.get("records"))) {
                    Map<String, Object> r = asMap(o);
                    long seq = num(r, "seq", -1);
                    producer.send(producerRecord(topic, r), (md, ex) -> {
                        if (ex != null) emit(obj("event", "produce_failed", "seq", seq, "message", String.valueOf(ex)));
                        else emit(obj("event", "produced", "seq", seq, "partition", md.partition(), "offset", md.offset()));
                    });
                }
            }
            // flush() waits for every record's callback (bounded by delivery.timeout.ms).
            producer.flush();
        }
        emit(obj("event", "closed"));
    }

    // A transactional producer driven one step at a time: begin, send (flushed), send_offsets
    // (sendOffsetsToTransaction for a group), commit, abort.
    private static void txnProducer(Map<String, Object> cmd) throws InterruptedException {
        long deadline = System.currentTimeMillis() + num(cmd, "timeout_ms", 120000);
        String topic = str(cmd, "topic", null);
        Properties props = producerProps(cmd);
        props.put("transactional.id", str(cmd, "transactional_id", null));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            emit(obj("event", "ready"));
            for (Map<String, Object> c; (c = nextCommand(deadline)) != null; ) {
                String step = str(c, "op", "");
                try {
                    switch (step) {
                        case "begin": producer.beginTransaction(); break;
                        case "commit": producer.commitTransaction(); break;
                        case "abort": producer.abortTransaction(); break;
                        case "send_offsets": {
                            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                            for (Object o : asList(c.get("offsets"))) {
                                Map<String, Object> m = asMap(o);
                                offsets.put(new TopicPartition(str(m, "topic", null), (int) num(m, "partition", 0)),
                                            new OffsetAndMetadata(num(m, "offset", 0)));
                            }
                            producer.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(str(c, "group", null)));
                            break;
                        }
                        case "send": {
                            List<Object> recs = asList(c.get("records"));
                            List<Future<RecordMetadata>> futures = new ArrayList<>();
                            for (Object o : recs) futures.add(producer.send(producerRecord(topic, asMap(o))));
                            producer.flush();
                            for (int i = 0; i < recs.size(); i++) {
                                RecordMetadata md = futures.get(i).get(30, TimeUnit.SECONDS);
                                emit(obj("event", "produced", "seq", num(asMap(recs.get(i)), "seq", -1),
                                         "partition", md.partition(), "offset", md.offset()));
                            }
                            break;
                        }
                        default: throw new IllegalArgumentException("unknown step " + step);
                    }
                    emit(obj("event", "txn", "step", step));
                } catch (Exception e) {
                    Throwable root = e;
                    while (root.getCause() != null && root.getCause() != root) root = root.getCause();
                    emit(obj("event", "txn_failed", "step", step, "error", root.getClass().getSimpleName(),
                             "message", String.valueOf(root.getMessage())));
                }
            }
        }
        emit(obj("event", "closed"));
    }

    private static Properties consumerProps(Map<String, Object> cmd, String groupId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", str(cmd, "bootstrap", null));
        p.put("client.id", "kwire-java-consumer");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", bool(cmd, "from_beginning", true) ? "earliest" : "latest");
        if (groupId != null) {
            p.put("group.id", groupId);
            String proto = str(cmd, "group_protocol", "classic");
            p.put("group.protocol", proto);
            if (proto.equals("classic")) {
                // Short timers keep rebalances quick; the broker's minimum session is 6 s.
                p.put("session.timeout.ms", "6000");
                p.put("heartbeat.interval.ms", "500");
            }
        }
        putExtra(p, cmd);
        return p;
    }

    private static void consume(Map<String, Object> cmd) {
        long deadline = System.currentTimeMillis() + num(cmd, "timeout_ms", 30000);
        long count = num(cmd, "count", 1);
        String topic = str(cmd, "topic", null);
        String groupId = str(cmd, "group_id", null);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(cmd, groupId))) {
            if (groupId == null) {
                List<TopicPartition> tps = new ArrayList<>();
                List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofMillis(Math.max(1, deadline - System.currentTimeMillis())));
                for (PartitionInfo pi : infos) tps.add(new TopicPartition(topic, pi.partition()));
                consumer.assign(tps);
                if (bool(cmd, "from_beginning", true)) consumer.seekToBeginning(tps); else consumer.seekToEnd(tps);
            } else {
                consumer.subscribe(List.of(topic));
            }
            long got = 0;
            while (got < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    emit(record(r));
                    got++;
                }
                if (groupId != null && !recs.isEmpty()) consumer.commitSync(nextOffsets(recs));
            }
        }
        emit(obj("event", "done"));
    }

    private static void member(Map<String, Object> cmd) throws InterruptedException {
        long deadline = System.currentTimeMillis() + num(cmd, "timeout_ms", 120000);
        String topic = str(cmd, "topic", null);
        String groupId = str(cmd, "group_id", null);
        TreeSet<Integer> owned = new TreeSet<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(cmd, groupId))) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                    for (TopicPartition tp : parts) owned.remove(tp.partition());
                    emit(obj("event", "assignment", "partitions", new ArrayList<>(owned)));
                }
                @Override public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    for (TopicPartition tp : parts) owned.add(tp.partition());
                    emit(obj("event", "assignment", "partitions", new ArrayList<>(owned)));
                }
                @Override public void onPartitionsLost(Collection<TopicPartition> parts) {
                    onPartitionsRevoked(parts);
                }
            });
            emit(obj("event", "ready"));
            while (System.currentTimeMillis() < deadline) {
                Object line = STDIN.poll();
                if (line == EOF) break;
                if (line != null && str(asMap(Json.parse((String) line)), "op", "").equals("stop")) break;
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(100));
                if (recs.isEmpty()) continue;
                try {
                    // Commit before reporting: a reported record is a committed one.
                    consumer.commitSync(nextOffsets(recs));
                } catch (Exception e) {
                    emit(obj("event", "commit_failed", "message", String.valueOf(e.getMessage())));
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> r : recs) emit(record(r));
            }
        }
        emit(obj("event", "closed"));
    }

    private static Map<TopicPartition, OffsetAndMetadata> nextOffsets(ConsumerRecords<byte[], byte[]> recs) {
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : recs) {
            out.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        return out;
    }

    private static Map<String, Object> record(ConsumerRecord<byte[], byte[]> r) {
        List<Object> headers = new ArrayList<>();
        for (Header h : r.headers()) headers.add(java.util.Arrays.asList(h.key(), hexOrNull(h.value())));
        return obj("event", "record", "partition", r.partition(), "offset", r.offset(),
            "key", hexOrNull(r.key()), "value", hexOrNull(r.value()), "headers", headers);
    }

    private static void putExtra(Properties p, Map<String, Object> cmd) {
        Object extra = cmd.get("config");
        if (extra != null) for (Map.Entry<String, Object> e : asMap(extra).entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
    }

    // ---- small helpers ----------------------------------------------------------------

    private static synchronized void emit(Map<String, Object> o) {
        System.out.println(Json.write(o));
        System.out.flush();
    }

    private static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object o) { return (Map<String, Object>) o; }

    @SuppressWarnings("unchecked")
    private static List<Object> asList(Object o) { return o == null ? List.of() : (List<Object>) o; }

    private static String str(Map<String, Object> m, String k, String dflt) {
        Object v = m.get(k);
        return v == null ? dflt : v.toString();
    }

    private static long num(Map<String, Object> m, String k, long dflt) {
        Object v = m.get(k);
        return v == null ? dflt : ((Number) v).longValue();
    }

    private static boolean bool(Map<String, Object> m, String k, boolean dflt) {
        Object v = m.get(k);
        return v == null ? dflt : (Boolean) v;
    }

    private static byte[] unhex(String s) {
        if (s == null) return null;
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    private static String hexOrNull(byte[] b) {
        if (b == null) return null;
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) sb.append(Character.forDigit((x >> 4) & 0xF, 16)).append(Character.forDigit(x & 0xF, 16));
        return sb.toString();
    }

    /** Just enough JSON: objects, arrays, strings, numbers, true/false/null. Public: ShareDriver.java,
     *  run by the source launcher with these classes on its class path, speaks it too. */
    public static final class Json {
        private final String s;
        private int i;

        private Json(String s) { this.s = s; }

        public static Object parse(String text) {
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

        public static String write(Object o) {
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
                char c = str.charAt(k);
                if (c == '"' || c == '\\') sb.append('\\').append(c);
                else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                else sb.append(c);
            }
            sb.append('"');
        }
    }
}
