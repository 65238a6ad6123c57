package dev.agentd.testing;

import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.bson.BsonTimestamp;
import de.bwaldvogel.mongo.bson.Document;
import io.netty.channel.Channel;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * mongo-java-server's memory backend with what agentd's replica-set tests need from a real
 * server and mongo-java-server lacks: a replica-set hello and step-down windows ({@link
 * ReplicaSetRole}), change streams that end as a real server ends them ({@link
 * ChangeStreamCursors}), createIndexes conflicts ({@link IndexConflicts}), the standalone answer
 * to {@code $changeStream} (error 40573) when change streams are off, and injected write-concern
 * errors; reads never see a half-applied write ({@link WholeDocumentReads}). Every answer has the shape a real mongod sends, so the driver parses it as it would in
 * production.
 *
 * <p>{@code replSetStepDown} is answered as a one-member replica set would: the node is not primary for
 * {@code stepDownSecs}. Test hooks (admin commands, answered {@code {ok: 1}}): {@code agentdTestCloseChangeStreams},
 * {@code agentdTestOversizedChangeEvent}, {@code {agentdTestStepDown: 1, ms}} and {@code
 * {agentdTestWriteConcernError: 1, count, code, skip}} (the {@code count} writes after the next {@code skip}
 * are applied, then answered with a writeConcernError: an outcome the client cannot know) and {@code
 * {agentdTestWriteError: 1, count, code, skip}} (the {@code count} writes after the next {@code skip} fail
 * with that error code before they are applied).
 */
final class AgentdTestBackend extends MemoryBackend {
  private final ReplicaSetRole role;
  private final boolean changeStreams;
  private final ChangeStreamCursors streams = new ChangeStreamCursors();
  private final WholeDocumentReads reads = new WholeDocumentReads();
  private final AtomicInteger writeConcernErrors = new AtomicInteger();
  private volatile int writeConcernErrorCode = 64;
  private final AtomicInteger writeConcernSkips = new AtomicInteger();
  private final AtomicInteger writeErrors = new AtomicInteger();
  private final AtomicInteger writeErrorSkips = new AtomicInteger();
  private volatile int writeErrorCode = 10107;

  AgentdTestBackend(ReplicaSetRole role, boolean changeStreams) {
    this.role = role;
    this.changeStreams = changeStreams;
  }

  @Override
  public Document handleCommand(Channel channel, String database, String command, Document query) {
    switch (command.toLowerCase(Locale.ROOT)) {
      case "ismaster":
      case "hello":
        return role.hello(super.handleCommand(channel, database, "ismaster", query));
      case "agentdteststepdown":
        role.stepDown(ServerReplies.number(query, "ms", 10_000));
        return ServerReplies.ok(new Document());
      case "replsetstepdown":
        // A one-member set: the node stays secondary for the whole stepDownSecs (no other member can be elected).
        if (!role.isReplicaSet()) return ServerReplies.error(76, "NoReplicationEnabled", "not running with --replSet");
        role.stepDown(1000 * ServerReplies.number(query, command, 60));
        return ServerReplies.ok(new Document());
      case "agentdtestclosechangestreams":
        return ServerReplies.ok(new Document("closed", Integer.valueOf(streams.closeAll())));
      case "agentdtestoversizedchangeevent":
        return ServerReplies.ok(new Document("poisoned", Integer.valueOf(streams.poisonWithOversizedEvent())));
      case "agentdtestwriteconcernerror":
        writeConcernErrorCode = (int) ServerReplies.number(query, "code", 64);
        writeConcernSkips.set((int) ServerReplies.number(query, "skip", 0));
        writeConcernErrors.set((int) ServerReplies.number(query, "count", 1));
        return ServerReplies.ok(new Document());
      case "agentdtestwriteerror":
        writeErrorCode = (int) ServerReplies.number(query, "code", 10107);
        writeErrorSkips.set((int) ServerReplies.number(query, "skip", 0));
        writeErrors.set((int) ServerReplies.number(query, "count", 1));
        return ServerReplies.ok(new Document());
      case "aggregate":
        return reads.read(() -> aggregate(channel, database, command, query));
      case "getmore":
        return reads.read(() -> getMore(channel, database, command, query));
      case "killcursors":
        return killCursors(channel, database, command, query);
      case "insert":
      case "update":
      case "delete":
      case "findandmodify":
        return reads.write(() -> write(channel, database, command, query));
      case "createindexes":
        return reads.write(() -> createIndexes(channel, database, command, query));
      case "find":
      case "count":
      case "distinct":
      case "listindexes":
        if (role.steppedDown() && !secondaryOk(query)) return ReplicaSetRole.notPrimaryNoSecondaryOk();
        return reads.read(() -> super.handleCommand(channel, database, command, query));
      case "drop": {
        Document reply = reads.write(() -> super.handleCommand(channel, database, command, query));
        streams.invalidate(database + "." + query.get(command));
        return reply;
      }
      case "dropdatabase": {
        Document reply = reads.write(() -> super.handleCommand(channel, database, command, query));
        streams.invalidate(database + ".");
        return reply;
      }
      case "renamecollection": {
        Document reply = super.handleCommand(channel, database, command, query);
        streams.invalidate(String.valueOf(query.get(command)));
        streams.invalidate(String.valueOf(query.get("to")));
        return reply;
      }
      default:
        return super.handleCommand(channel, database, command, query);
    }
  }

  private Document aggregate(Channel channel, String database, String command, Document query) {
    Document stage = ChangeStreamCursors.changeStreamStage(query);
    if (role.steppedDown() && !secondaryOk(query)) return ReplicaSetRole.notPrimaryNoSecondaryOk();
    if (stage == null) return super.handleCommand(channel, database, command, query);
    if (!changeStreams) {
      return ServerReplies.error(40573, "Location40573", "The $changeStream stage is only supported on replica sets");
    }
    if (streams.resumeFails(stage)) return ChangeStreamCursors.oversizedEventError();
    // A real replica set answers with the cluster time the stream starts after: a read with
    // afterClusterTime at it sees every write the stream does not deliver (agentd's catch-up reads).
    BsonTimestamp startedAt = new BsonTimestamp(Instant.now(), 1);
    Document reply = super.handleCommand(channel, database, command, query);
    Object cursor = reply.get("cursor");
    if (cursor instanceof Document) {
      long id = ServerReplies.number((Document) cursor, "id", 0);
      streams.opened(id, ChangeStreamCursors.namespaceOf(database, query), stage);
      if (role.isReplicaSet()) reply.put("operationTime", startedAt);
    }
    return reply;
  }

  private Document getMore(Channel channel, String database, String command, Document query) {
    long id = ServerReplies.number(query, command, 0);
    String namespace = database + "." + query.get("collection");
    switch (streams.fateOf(id)) {
      case INVALIDATE:
        endCursor(id);
        return ServerReplies.nextBatch(namespace, List.of(ChangeStreamCursors.invalidateEvent()), 0);
      case CLOSE:
        endCursor(id);
        return ServerReplies.nextBatch(namespace, List.of(), 0);
      case OVERSIZED:
        endCursor(id);
        return ChangeStreamCursors.oversizedEventError();
      default:
        Document reply = super.handleCommand(channel, database, command, query);
        Object cursor = reply.get("cursor");
        if (cursor instanceof Document && ServerReplies.number((Document) cursor, "id", 0) == 0) streams.forget(id);
        return reply;
    }
  }

  @SuppressWarnings("unchecked")
  private Document killCursors(Channel channel, String database, String command, Document query) {
    Object ids = query.get("cursors");
    if (ids instanceof List) {
      for (Object id : (List<Object>) ids) if (id instanceof Number) streams.forget(((Number) id).longValue());
    }
    return super.handleCommand(channel, database, command, query);
  }

  private Document write(Channel channel, String database, String command, Document query) {
    if (role.steppedDown()) return ReplicaSetRole.notWritablePrimary();
    if (writeErrors.get() > 0 && writeErrorSkips.getAndUpdate(n -> Math.max(0, n - 1)) == 0
        && writeErrors.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      return ServerReplies.error(writeErrorCode, "Location" + writeErrorCode, "injected write error " + writeErrorCode);
    }
    Document reply = super.handleCommand(channel, database, command, query);
    if (writeConcernErrors.get() > 0 && writeConcernSkips.getAndUpdate(n -> Math.max(0, n - 1)) == 0
        && writeConcernErrors.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      int code = writeConcernErrorCode;
      Document error = new Document("code", Integer.valueOf(code));
      error.put("codeName", code == 64 ? "WriteConcernFailed" : "Location" + code);
      error.put("errmsg", code == 64 ? "waiting for replication timed out" : "write concern error " + code);
      error.put("errInfo", new Document("wtimeout", Boolean.valueOf(code == 64)));
      reply.put("writeConcernError", error);
    }
    return reply;
  }

  @SuppressWarnings("unchecked")
  private Document createIndexes(Channel channel, String database, String command, Document query) {
    if (role.steppedDown()) return ReplicaSetRole.notWritablePrimary();
    Document listed = super.handleCommand(channel, database, "listIndexes", new Document("listIndexes", query.get(command)));
    Document cursor = (Document) listed.get("cursor");
    List<Document> existing = cursor == null ? List.of() : (List<Document>) cursor.get("firstBatch");
    Document conflict = IndexConflicts.conflict(existing, query.get("indexes"));
    return conflict != null ? conflict : super.handleCommand(channel, database, command, query);
  }

  private void endCursor(long id) {
    streams.forget(id);
    closeCursors(List.of(Long.valueOf(id)));
  }

  /** True when the command carries a read preference that lets a secondary answer. */
  private static boolean secondaryOk(Document query) {
    Object preference = query.get("$readPreference");
    return preference instanceof Document && !"primary".equals(((Document) preference).get("mode"));
  }
}
