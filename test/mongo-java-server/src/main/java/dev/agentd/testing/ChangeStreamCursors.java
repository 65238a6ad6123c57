package dev.agentd.testing;

import de.bwaldvogel.mongo.bson.BsonTimestamp;
import de.bwaldvogel.mongo.bson.Document;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The open change-stream cursors and how a real replica set would end them. mongo-java-server
 * keeps a change stream open forever; a real server ends it:
 *
 * <ul>
 *   <li>after the watched collection is dropped or renamed, or its database dropped: the next
 *       getMore returns an {@code invalidate} event and cursor ID 0 ({@link #invalidate});
 *   <li>when the server closes the cursor for another reason: an empty batch with cursor ID 0
 *       ({@link #closeAll}, a test hook);
 *   <li>when an event exceeds the 16 MiB BSON limit (MongoDB before 6.0.7): the getMore fails with
 *       BSONObjectTooLarge (10334), and so does every stream resumed from a token before that event
 *       ({@link #poisonWithOversizedEvent}, a test hook); only a stream opened from "now" works.
 * </ul>
 */
final class ChangeStreamCursors {
  /** What the next getMore of a tracked cursor answers. */
  enum Fate {
    LIVE,
    INVALIDATE,
    CLOSE,
    OVERSIZED
  }

  private static final class Tracked {
    final String namespace;
    volatile Fate fate = Fate.LIVE;

    Tracked(String namespace) {
      this.namespace = namespace;
    }
  }

  private final Map<Long, Tracked> cursors = new ConcurrentHashMap<>();
  private volatile boolean poisoned;

  /** True when a change-stream aggregate resuming from a token must fail (an oversized event lies after it). */
  boolean resumeFails(Document changeStreamStage) {
    return poisoned && (changeStreamStage.containsKey("resumeAfter") || changeStreamStage.containsKey("startAfter"));
  }

  /** Records a change stream the server opened; one opened from "now" lies after any oversized event. */
  void opened(long cursorId, String namespace, Document changeStreamStage) {
    boolean resumed = changeStreamStage.containsKey("resumeAfter") || changeStreamStage.containsKey("startAfter");
    if (!resumed) poisoned = false;
    if (cursorId != 0) cursors.put(Long.valueOf(cursorId), new Tracked(namespace));
  }

  /** How the getMore of {@code cursorId} must be answered (LIVE: normally). */
  Fate fateOf(long cursorId) {
    Tracked tracked = cursors.get(Long.valueOf(cursorId));
    return tracked == null ? Fate.LIVE : tracked.fate;
  }

  /** Forgets a cursor (ended, or killed by killCursors). */
  void forget(long cursorId) {
    cursors.remove(Long.valueOf(cursorId));
  }

  /** Every stream watching {@code namespace} (or, with a trailing dot, any collection of that database) ends with invalidate. */
  void invalidate(String namespace) {
    for (Tracked tracked : cursors.values()) {
      boolean match = namespace.endsWith(".") ? tracked.namespace.startsWith(namespace) : tracked.namespace.equals(namespace);
      if (match) tracked.fate = Fate.INVALIDATE;
    }
  }

  /** Test hook: every open stream's next getMore answers an empty batch with cursor ID 0. Returns how many. */
  int closeAll() {
    cursors.values().forEach(tracked -> tracked.fate = Fate.CLOSE);
    return cursors.size();
  }

  /** Test hook: an oversized event now follows every open stream's position (see the class comment). */
  int poisonWithOversizedEvent() {
    poisoned = true;
    cursors.values().forEach(tracked -> tracked.fate = Fate.OVERSIZED);
    return cursors.size();
  }

  /** The invalidate event a real server sends last on an invalidated stream. */
  static Document invalidateEvent() {
    String token = Long.toHexString(new BsonTimestamp(Instant.now(), 1).getValue());
    Document event = new Document("_id", new Document("_data", token));
    event.put("operationType", "invalidate");
    return event;
  }

  /** The error a real server (before 6.0.7) answers when the next event exceeds 16 MiB. */
  static Document oversizedEventError() {
    return ServerReplies.error(
        10334,
        "BSONObjectTooLarge",
        "Executor error during getMore :: caused by :: BSONObj size: 16794024 (0x10040A8) is invalid. "
            + "Size must be between 0 and 16793600(16MB) First element: _id: { _data: \"8263\" }");
  }

  /** Namespace of the watched collection of a change-stream aggregate. */
  static String namespaceOf(String database, Document aggregate) {
    return database + "." + aggregate.get("aggregate");
  }

  /** The {@code $changeStream} stage of an aggregate command, or null when it is not a change stream. */
  @SuppressWarnings("unchecked")
  static Document changeStreamStage(Document aggregate) {
    Object pipeline = aggregate.get("pipeline");
    if (!(pipeline instanceof List) || ((List<Object>) pipeline).isEmpty()) return null;
    Object first = ((List<Object>) pipeline).get(0);
    if (!(first instanceof Document)) return null;
    Object stage = ((Document) first).get("$changeStream");
    return stage instanceof Document ? (Document) stage : null;
  }
}
