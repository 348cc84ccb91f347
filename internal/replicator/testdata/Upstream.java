// Runs Apache Kafka's own MM2 client against a cluster kmirror writes to:
// RemoteClusterUtils.upstreamClusters and replicationHops(alias), which
// read the cluster's heartbeats topics. Prints "upstream a,b" and "hops n".
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class Upstream {
    public static void main(String[] args) throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        System.out.println("upstream " + String.join(",", RemoteClusterUtils.upstreamClusters(props)));
        System.out.println("hops " + RemoteClusterUtils.replicationHops(props, args[1]));
    }
}
