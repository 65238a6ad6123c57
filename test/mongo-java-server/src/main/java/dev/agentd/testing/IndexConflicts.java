package dev.agentd.testing;

import de.bwaldvogel.mongo.bson.Document;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The createIndexes checks a real server makes and mongo-java-server does not: an index whose key
 * pattern already exists under another name fails with IndexOptionsConflict (85); a name already
 * used by another key pattern fails with IndexKeySpecsConflict (86).
 */
final class IndexConflicts {
  private IndexConflicts() {}

  /** The error a real server answers for {@code wanted} given the collection's {@code existing} indexes, or null. */
  @SuppressWarnings("unchecked")
  static Document conflict(List<Document> existing, Object wanted) {
    if (!(wanted instanceof List)) return null;
    for (Object spec : (List<Object>) wanted) {
      if (!(spec instanceof Document)) continue;
      Document index = (Document) spec;
      for (Document present : existing) {
        boolean sameKey = sameKeyPattern((Document) present.get("key"), (Document) index.get("key"));
        boolean sameName = String.valueOf(present.get("name")).equals(String.valueOf(index.get("name")));
        if (sameKey && !sameName) {
          return ServerReplies.error(85, "IndexOptionsConflict", "Index already exists with a different name: " + present.get("name"));
        }
        if (sameName && !sameKey) {
          return ServerReplies.error(
              86, "IndexKeySpecsConflict", "An existing index has the same name as the requested index. Requested index: " + index + ", existing index: " + present);
        }
      }
    }
    return null;
  }

  /** True when both key patterns name the same fields in the same order with the same directions. */
  static boolean sameKeyPattern(Document a, Document b) {
    if (a == null || b == null || a.size() != b.size()) return false;
    List<Map.Entry<String, Object>> left = new ArrayList<>(a.entrySet());
    List<Map.Entry<String, Object>> right = new ArrayList<>(b.entrySet());
    for (int i = 0; i < left.size(); i++) {
      if (!left.get(i).getKey().equals(right.get(i).getKey())) return false;
      Object x = left.get(i).getValue();
      Object y = right.get(i).getValue();
      boolean equal = x instanceof Number && y instanceof Number ? ((Number) x).doubleValue() == ((Number) y).doubleValue() : String.valueOf(x).equals(String.valueOf(y));
      if (!equal) return false;
    }
    return true;
  }
}
