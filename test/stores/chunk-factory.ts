/** Chunks for the chunk log tests (no vitest imports: the child writer process uses them too). */
import type { StoredChunk } from "../../stores/chunk-log.js";

/** A model-text chunk numbered `sequence`. */
export function chunk(sequence: number, text = `chunk ${sequence}`): StoredChunk {
  return { sequence, chunk: { sequence, modelChunk: { role: "model", content: [{ text }] } } };
}

/** Chunks `from`..`to` (inclusive), as {@link chunk} makes them. */
export function chunks(from: number, to: number): StoredChunk[] {
  return Array.from({ length: to - from + 1 }, (_, i) => chunk(from + i));
}
