// Java AdminClient against a kwire broker: creates a topic with manual replica assignments and
// describes it back. kafka-clients 4.x describes topics with DescribeTopicPartitions (KIP-966)
// when the broker advertises it, paging with a cursor. Prints one line per partition:
// "topic partition leader r1,r2,..". Run with the single-file source launcher (java File.java).
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.TopicPartitionInfo;

public class DescribeTopics {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        try (Admin admin = Admin.create(props)) {
            Map<Integer, List<Integer>> assignment = new HashMap<>();
            assignment.put(0, Arrays.asList(3, 1));
            assignment.put(1, Arrays.asList(2, 3));
            assignment.put(2, Arrays.asList(1, 2));
            admin.createTopics(List.of(new NewTopic("placed", assignment))).all().get();
            // A page of one partition forces the client through the cursor.
            DescribeTopicsOptions options = new DescribeTopicsOptions().partitionSizeLimitPerResponse(1);
            Map<String, TopicDescription> all = admin.describeTopics(List.of("placed", "other"), options)
                .allTopicNames().get();
            for (String name : new TreeSet<>(all.keySet())) {
                for (TopicPartitionInfo p : all.get(name).partitions()) {
                    StringJoiner replicas = new StringJoiner(",");
                    p.replicas().forEach(n -> replicas.add(Integer.toString(n.id())));
                    System.out.println(name + " " + p.partition() + " " + p.leader().id() + " " + replicas);
                }
            }
        }
    }
}
