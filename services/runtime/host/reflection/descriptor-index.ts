// Every file the reflection service can answer for, with lookups by file name, symbol and
// extension. Built once from descriptors already in memory (protobuf-es DescFile).
import { type DescEnum, type DescFile, type DescMessage, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";

export interface DescriptorIndex {
  /** Fully-qualified names of the services the server actually serves, sorted. */
  readonly serviceNames: readonly string[];
  /** Files by path, e.g. "orders/v1/order.proto". */
  fileByName(name: string): DescFile | undefined;
  /** The file declaring a message, enum, enum value, field, service, method or extension. */
  fileBySymbol(symbol: string): DescFile | undefined;
  fileByExtension(extendee: string, number: number): DescFile | undefined;
  /** Extension numbers known for a message; undefined when the message itself is unknown. */
  extensionNumbers(extendee: string): number[] | undefined;
  /** The serialized FileDescriptorProto of a file. */
  serialize(file: DescFile): Uint8Array;
}

export interface DescriptorIndexOptions {
  /** Files to index; their imports are followed, so roots are enough. */
  readonly files: Iterable<DescFile>;
  readonly serviceNames: Iterable<string>;
}

export function createDescriptorIndex(options: DescriptorIndexOptions): DescriptorIndex {
  const files = new Map<string, DescFile>();
  const symbols = new Map<string, DescFile>();
  const messages = new Set<string>();
  const extensions = new Map<string, Map<number, DescFile>>();
  const serialized = new WeakMap<DescFile, Uint8Array>();

  const addSymbol = (name: string, file: DescFile): void => {
    if (!symbols.has(name)) {
      symbols.set(name, file);
    }
  };
  const addExtension = (extendee: string, number: number, file: DescFile): void => {
    let byNumber = extensions.get(extendee);
    if (byNumber === undefined) {
      byNumber = new Map();
      extensions.set(extendee, byNumber);
    }
    if (!byNumber.has(number)) {
      byNumber.set(number, file);
    }
  };
  const addEnum = (desc: DescEnum, scope: string, file: DescFile): void => {
    addSymbol(desc.typeName, file);
    // Enum values are siblings of their enum in protobuf's scoping, not children.
    for (const value of desc.values) {
      addSymbol(scope === "" ? value.name : `${scope}.${value.name}`, file);
    }
  };
  const addMessage = (desc: DescMessage, file: DescFile): void => {
    addSymbol(desc.typeName, file);
    messages.add(desc.typeName);
    for (const field of desc.fields) {
      addSymbol(`${desc.typeName}.${field.name}`, file);
    }
    for (const oneof of desc.oneofs) {
      addSymbol(`${desc.typeName}.${oneof.name}`, file);
    }
    for (const nested of desc.nestedMessages) {
      addMessage(nested, file);
    }
    for (const nested of desc.nestedEnums) {
      addEnum(nested, desc.typeName, file);
    }
    for (const ext of desc.nestedExtensions) {
      addSymbol(ext.typeName, file);
      addExtension(ext.extendee.typeName, ext.number, file);
    }
  };
  const addFile = (file: DescFile): void => {
    if (files.has(file.proto.name)) {
      return;
    }
    files.set(file.proto.name, file);
    for (const message of file.messages) {
      addMessage(message, file);
    }
    for (const desc of file.enums) {
      addEnum(desc, file.proto.package, file);
    }
    for (const ext of file.extensions) {
      addSymbol(ext.typeName, file);
      addExtension(ext.extendee.typeName, ext.number, file);
    }
    for (const service of file.services) {
      addSymbol(service.typeName, file);
      for (const method of service.methods) {
        addSymbol(`${service.typeName}.${method.name}`, file);
      }
    }
    for (const dependency of file.dependencies) {
      addFile(dependency);
    }
  };
  for (const file of options.files) {
    addFile(file);
  }

  const strip = (symbol: string): string => (symbol.startsWith(".") ? symbol.slice(1) : symbol);
  return {
    serviceNames: [...new Set(options.serviceNames)].sort(),
    fileByName: (name) => files.get(name),
    fileBySymbol: (symbol) => symbols.get(strip(symbol)),
    fileByExtension: (extendee, number) => extensions.get(strip(extendee))?.get(number),
    extensionNumbers(extendee) {
      const name = strip(extendee);
      if (!messages.has(name)) {
        return undefined;
      }
      return [...(extensions.get(name)?.keys() ?? [])].sort((a, b) => a - b);
    },
    serialize(file) {
      let bytes = serialized.get(file);
      if (bytes === undefined) {
        bytes = toBinary(FileDescriptorProtoSchema, file.proto);
        serialized.set(file, bytes);
      }
      return bytes;
    },
  };
}
