package dev.agentd.testing;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import java.util.List;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * Starts mongo-java-server (memory backend, oplog enabled so change streams work) on 127.0.0.1
 * and prints one JSON line with the bound port.
 *
 * <p>Wire version: mongo-java-server 1.47 advertises at most wire version 8 (MongoDB 4.2), and the
 * Node.js driver 7 refuses servers below wire version 9 (MongoDB 4.4). The server is therefore
 * configured (through its public {@code MongoBackend.version(MongoVersion)} API) to advertise 4.4 /
 * wire 9. The commands the agentd store sends (find, insert, replace, createIndex, aggregate with
 * $changeStream, getMore, killCursors) are the same in 4.2 and 4.4.
 *
 * <p>Usage: java -cp target/classes:target/lib/&#42; dev.agentd.testing.MongoJavaServerMain [port]
 * (port 0 or absent picks a free port). Runs until killed.
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
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
    MemoryBackend backend = new MemoryBackend();
    backend.version(MONGO_4_4);
    backend.enableOplog();
    MongoServer server = new MongoServer(backend);
    server.bind("127.0.0.1", port);
    System.out.println("{\"msg\":\"mongo-java-server listening\",\"port\":" + server.getLocalAddress().getPort() + "}");
    System.out.flush();
    Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
    Thread.currentThread().join();
  }
}
