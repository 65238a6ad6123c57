package dev.agentd.testing;

import de.bwaldvogel.mongo.bson.Document;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * Reads that never see a half-applied write, as on a real mongod. mongo-java-server updates a stored
 * document in place (clear, then refill) and hands the stored document itself to the reply, which
 * netty serialises after the collection's lock is released: a reader racing a writer could send a
 * document with some fields of the old version and some of the new one (about 1 read in 29,000 under
 * agentd's racing-writer tests). Here every write runs under a write lock, and every read runs under
 * a read lock and deep-copies the documents of its reply before the lock is released.
 */
final class WholeDocumentReads {
  private final ReadWriteLock lock = new ReentrantReadWriteLock();

  /** Runs a write command exclusively. */
  Document write(Supplier<Document> command) {
    lock.writeLock().lock();
    try {
      return copyBatches(command.get());
    } finally {
      lock.writeLock().unlock();
    }
  }

  /** Runs a read command with no write in progress; its reply holds copies, never stored documents. */
  Document read(Supplier<Document> command) {
    lock.readLock().lock();
    try {
      return copyBatches(command.get());
    } finally {
      lock.readLock().unlock();
    }
  }

  /** The reply with its cursor batch ({@code firstBatch} / {@code nextBatch}) and {@code value} deep-copied. */
  private static Document copyBatches(Document reply) {
    Object cursor = reply.get("cursor");
    if (cursor instanceof Document) {
      Document copied = new Document((Document) cursor);
      for (String key : List.of("firstBatch", "nextBatch")) {
        Object batch = copied.get(key);
        if (batch instanceof List) copied.put(key, copyAll((List<?>) batch));
      }
      reply.put("cursor", copied);
    }
    Object value = reply.get("value");
    if (value instanceof Document) reply.put("value", ((Document) value).cloneDeeply());
    return reply;
  }

  private static List<Object> copyAll(List<?> batch) {
    List<Object> copies = new ArrayList<>(batch.size());
    for (Object item : batch) copies.add(item instanceof Document ? ((Document) item).cloneDeeply() : item);
    return copies;
  }
}
