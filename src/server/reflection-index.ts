import {
  toBinary,
  type DescEnum,
  type DescExtension,
  type DescFile,
  type DescMessage,
  type DescService,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";

/**
 * Everything server reflection answers from: the served services, every file
 * they need (transitively), and an index of fully-qualified symbol names
 * (services, methods, messages, enums, enum-less nested types, extensions) to
 * the file that defines them. Serialized descriptors are cached.
 */
export class ReflectionIndex {
  /** Fully-qualified names of the served services, sorted. */
  readonly serviceNames: readonly string[];
  private readonly filesByName = new Map<string, DescFile>();
  private readonly fileBySymbol = new Map<string, DescFile>();
  private readonly extensionsByExtendee = new Map<string, DescExtension[]>();
  private readonly messageNames = new Set<string>();
  private readonly encoded = new Map<string, Uint8Array>();

  private readonly documented: ReadonlyMap<string, FileDescriptorProto>;

  /**
   * Indexes `services` and the transitive closure of their files. A file
   * found in `documented` (descriptors with source info, by file name) is
   * served from there, so its comments reach reflection clients.
   */
  constructor(services: readonly DescService[], documented: ReadonlyMap<string, FileDescriptorProto> = new Map()) {
    this.documented = documented;
    this.serviceNames = [...new Set(services.map((s) => s.typeName))].sort();
    for (const service of services) this.addFile(service.file);
  }

  /** The file registered under `filename` (e.g. "google/protobuf/struct.proto"). */
  fileByName(filename: string): DescFile | undefined {
    return this.filesByName.get(filename);
  }

  /** The file defining `symbol` (a fully-qualified name, leading dot allowed). */
  fileContainingSymbol(symbol: string): DescFile | undefined {
    return this.fileBySymbol.get(symbol.replace(/^\./, ""));
  }

  /** True when `typeName` is a known message. */
  hasMessage(typeName: string): boolean {
    return this.messageNames.has(typeName.replace(/^\./, ""));
  }

  /** Extensions of the message `typeName` found in the indexed files. */
  extensionsOf(typeName: string): readonly DescExtension[] {
    return this.extensionsByExtendee.get(typeName.replace(/^\./, "")) ?? [];
  }

  /**
   * `file` serialized as a FileDescriptorProto, followed by every file it
   * imports (transitively), each exactly once.
   */
  encodeWithDependencies(file: DescFile): Uint8Array[] {
    const out: Uint8Array[] = [];
    const seen = new Set<string>();
    const visit = (f: DescFile): void => {
      if (seen.has(f.name)) return;
      seen.add(f.name);
      out.push(this.encode(f));
      for (const dep of f.dependencies) visit(dep);
    };
    visit(file);
    return out;
  }

  private encode(file: DescFile): Uint8Array {
    let bytes = this.encoded.get(file.proto.name);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, this.documented.get(file.proto.name) ?? file.proto);
      this.encoded.set(file.proto.name, bytes);
    }
    return bytes;
  }

  private addFile(file: DescFile): void {
    if (this.filesByName.has(file.proto.name)) return;
    this.filesByName.set(file.proto.name, file);
    for (const service of file.services) {
      this.fileBySymbol.set(service.typeName, file);
      for (const method of service.methods) this.fileBySymbol.set(`${service.typeName}.${method.name}`, file);
    }
    for (const message of file.messages) this.addMessage(file, message);
    for (const en of file.enums) this.addEnum(file, en);
    for (const ext of file.extensions) this.addExtension(file, ext);
    for (const dep of file.dependencies) this.addFile(dep);
  }

  private addMessage(file: DescFile, message: DescMessage): void {
    this.fileBySymbol.set(message.typeName, file);
    this.messageNames.add(message.typeName);
    for (const nested of message.nestedMessages) this.addMessage(file, nested);
    for (const en of message.nestedEnums) this.addEnum(file, en);
    for (const ext of message.nestedExtensions) this.addExtension(file, ext);
  }

  private addEnum(file: DescFile, en: DescEnum): void {
    this.fileBySymbol.set(en.typeName, file);
  }

  private addExtension(file: DescFile, ext: DescExtension): void {
    this.fileBySymbol.set(ext.typeName, file);
    const list = this.extensionsByExtendee.get(ext.extendee.typeName) ?? [];
    list.push(ext);
    this.extensionsByExtendee.set(ext.extendee.typeName, list);
  }
}
