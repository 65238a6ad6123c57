package dev.agentd.testing;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import java.net.InetSocketAddress;
import java.util.List;

/**
 * Starts mongo-java-server (memory backend, oplog enabled so change streams work) on 127.0.0.1
 * and prints one JSON line with the bound port.
 *
 * <p>Wire version: mongo-java-server 1.47 advertises at most wire version 8 (MongoDB 4.2), and the
 * Node.js driver 7 refuses servers below wire version 9 (MongoDB 4.4). The server is therefore
 * configured (through its public {@code MongoBackend.version(MongoVersion)} API) to advertise 4.4 /
 * wire 9. The commands the agentd store sends (find, insert, update, delete, createIndexes,
 * listIndexes, aggregate with $changeStream, getMore, killCursors) are the same in 4.2 and 4.4.
 *
 * <p>Usage: java -cp target/classes:target/lib/&#42; dev.agentd.testing.MongoJavaServerMain [port]
 * [--replica-set NAME] [--no-change-streams] (port 0 or absent picks a free port). With {@code
 * --replica-set} the server presents itself as the primary of a one-member replica set; with
 * {@code --no-change-streams} it answers {@code $changeStream} as a standalone mongod does (error
 * 40573). See {@link AgentdTestBackend} for the test hooks. Runs until killed.
 */
public final class MongoJavaServerMain {
  private MongoJavaServerMain() {}

  /** MongoDB 4.4, wire version 9: the oldest server the Node.js driver 7 accepts. */
  private static final MongoVersion MONGO_4_4 =
      new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
          return List.of(4, 4, 0);
        }

        @Override
        public int getWireVersion() {
          return 9;
        }
      };

  public static void main(String[] args) throws Exception {
    int port = 0;
    String replicaSet = null;
    boolean changeStreams = true;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--replica-set":
          replicaSet = args[++i];
          break;
        case "--no-change-streams":
          changeStreams = false;
          break;
        default:
          port = Integer.parseInt(args[i]);
      }
    }
    ReplicaSetRole role = new ReplicaSetRole(replicaSet);
    AgentdTestBackend backend = new AgentdTestBackend(role, changeStreams);
    backend.version(MONGO_4_4);
    if (changeStreams) backend.enableOplog();
    MongoServer server = new MongoServer(backend);
    server.bind("127.0.0.1", port);
    InetSocketAddress address = server.getLocalAddress();
    role.listeningOn("127.0.0.1:" + address.getPort());
    System.out.println("{\"msg\":\"mongo-java-server listening\",\"port\":" + address.getPort() + "}");
    System.out.flush();
    Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
    Thread.currentThread().join();
  }
}
