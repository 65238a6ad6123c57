package dev.agentd.testing;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.ServerVersion;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * Starts mongo-java-server (memory backend, oplog enabled so change streams work, reporting
 * MongoDB 5.0 wire version) on 127.0.0.1 and prints one JSON line with the bound port.
 * Usage: java -cp target/classes:target/lib/* dev.agentd.testing.MongoJavaServerMain [port]
 * (port 0 or absent picks a free port). Runs until killed.
 */
public final class MongoJavaServerMain {
  private MongoJavaServerMain() {}

  public static void main(String[] args) throws Exception {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
    MemoryBackend backend = new MemoryBackend();
    backend.version(ServerVersion.MONGO_5_0);
    backend.enableOplog();
    MongoServer server = new MongoServer(backend);
    server.bind("127.0.0.1", port);
    System.out.println("{\"msg\":\"mongo-java-server listening\",\"port\":" + server.getLocalAddress().getPort() + "}");
    System.out.flush();
    Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
    Thread.currentThread().join();
  }
}
