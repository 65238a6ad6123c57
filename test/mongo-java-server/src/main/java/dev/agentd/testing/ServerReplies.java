package dev.agentd.testing;

import de.bwaldvogel.mongo.bson.Document;
import java.util.List;

/** Reply documents shaped exactly as a real mongod sends them (errors, cursor batches). */
final class ServerReplies {
  private ServerReplies() {}

  /** A command error: {@code {ok: 0, errmsg, code, codeName}}, optionally with error labels. */
  static Document error(int code, String codeName, String message, String... labels) {
    Document reply = new Document();
    reply.put("ok", Double.valueOf(0));
    reply.put("errmsg", message);
    reply.put("code", Integer.valueOf(code));
    reply.put("codeName", codeName);
    if (labels.length > 0) reply.put("errorLabels", List.of(labels));
    return reply;
  }

  /** A getMore reply: the batch and the cursor ID (0 = the server closed the cursor). */
  static Document nextBatch(String namespace, List<Document> batch, long cursorId) {
    Document cursor = new Document();
    cursor.put("id", Long.valueOf(cursorId));
    cursor.put("ns", namespace);
    cursor.put("nextBatch", batch);
    Document reply = new Document("cursor", cursor);
    reply.put("ok", Double.valueOf(1));
    return reply;
  }

  /** {@code {ok: 1}} with the given fields. */
  static Document ok(Document fields) {
    Document reply = new Document(fields);
    reply.put("ok", Double.valueOf(1));
    return reply;
  }

  /** The numeric value of a command field (e.g. {@code {getMore: <cursorId>}}), or {@code fallback}. */
  static long number(Document command, String key, long fallback) {
    Object value = command.get(key);
    return value instanceof Number ? ((Number) value).longValue() : fallback;
  }
}
