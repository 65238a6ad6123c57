package dev.agentd.testing;

import de.bwaldvogel.mongo.bson.Document;
import java.util.List;

/**
 * What the server says it is, and when it cannot serve. Without a replica-set name it is a
 * standalone server (mongo-java-server's own hello). With one, hello describes the primary of a
 * one-member replica set, so the driver applies replica-set rules (read preference,
 * {@code $readPreference} on the wire). A step-down window (test hook) makes the node a secondary
 * for a while, as during a real failover: writes fail with NotWritablePrimary (10107), primary
 * reads with NotPrimaryNoSecondaryOk (13435), and hello reports no primary until it ends.
 */
final class ReplicaSetRole {
  private final String setName;
  private volatile String me = "";
  private volatile long steppedDownUntil;

  ReplicaSetRole(String setName) {
    this.setName = setName;
  }

  /** The address the server listens on ({@code host:port}), as hello reports it. */
  void listeningOn(String address) {
    me = address;
  }

  /** True when the server presents itself as a replica-set member. */
  boolean isReplicaSet() {
    return setName != null;
  }

  /** Test hook (and replSetStepDown): the node is not primary for {@code millis} from now. */
  void stepDown(long millis) {
    steppedDownUntil = System.currentTimeMillis() + millis;
  }

  boolean steppedDown() {
    return System.currentTimeMillis() < steppedDownUntil;
  }

  /** Adds the replica-set fields to mongo-java-server's hello reply (unchanged for a standalone). */
  Document hello(Document standalone) {
    if (setName == null) return standalone;
    boolean primary = !steppedDown();
    Document reply = new Document(standalone);
    reply.put("ismaster", Boolean.valueOf(primary));
    reply.put("isWritablePrimary", Boolean.valueOf(primary));
    reply.put("secondary", Boolean.valueOf(!primary));
    reply.put("setName", setName);
    reply.put("setVersion", Integer.valueOf(1));
    reply.put("hosts", List.of(me));
    reply.put("me", me);
    if (primary) reply.put("primary", me);
    return reply;
  }

  /** The error a write gets on a node that is not primary. */
  static Document notWritablePrimary() {
    return ServerReplies.error(10107, "NotWritablePrimary", "not primary");
  }

  /** The error a primary-only read gets on a node that is not primary. */
  static Document notPrimaryNoSecondaryOk() {
    return ServerReplies.error(13435, "NotPrimaryNoSecondaryOk", "not primary and secondaryOk=false");
  }
}
