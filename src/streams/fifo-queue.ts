/**
 * A first-in first-out queue on a ring buffer: `push` and `shift` are O(1)
 * (amortised: the buffer doubles when full, and halves when a quarter full),
 * however many items wait. `Array.prototype.shift` moves every remaining item,
 * so a queue of n items drained with it costs O(n²).
 */
export class FifoQueue<T> {
  private slots: (T | undefined)[];
  private head = 0;
  private count = 0;

  /** `initialCapacity` is rounded up to a power of two (at least 4). */
  constructor(initialCapacity = 4) {
    this.slots = new Array<T | undefined>(powerOfTwoAtLeast(initialCapacity));
  }

  /** Number of queued items. */
  get size(): number {
    return this.count;
  }

  /** Slots allocated for items: grows to fit, shrinks to at most four times `size` (never below 4) as items are taken. */
  get allocated(): number {
    return this.slots.length;
  }

  /** Appends `item` at the tail. */
  push(item: T): void {
    if (this.count === this.slots.length) this.resize(this.slots.length * 2);
    this.slots[(this.head + this.count) & (this.slots.length - 1)] = item;
    this.count++;
  }

  /** Removes and returns the item at the head; undefined when empty. */
  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.slots[this.head];
    this.slots[this.head] = undefined; // no reference kept to a taken item
    this.head = (this.head + 1) & (this.slots.length - 1);
    this.count--;
    if (this.slots.length > MIN_SLOTS && this.count <= this.slots.length >>> 2) this.resize(this.slots.length >>> 1);
    return item;
  }

  /** The queued items, head first (a copy). */
  toArray(): T[] {
    const items: T[] = [];
    for (let i = 0; i < this.count; i++) items.push(this.slots[(this.head + i) & (this.slots.length - 1)] as T);
    return items;
  }

  /** Drops every queued item. */
  clear(): void {
    this.slots = new Array<T | undefined>(MIN_SLOTS);
    this.head = 0;
    this.count = 0;
  }

  private resize(length: number): void {
    const items = this.toArray();
    this.slots = new Array<T | undefined>(Math.max(MIN_SLOTS, length));
    for (let i = 0; i < items.length; i++) this.slots[i] = items[i];
    this.head = 0;
  }
}

const MIN_SLOTS = 4;

function powerOfTwoAtLeast(n: number): number {
  let length = MIN_SLOTS;
  while (length < n) length *= 2;
  return length;
}
