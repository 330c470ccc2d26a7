// The types a front can name at run time (google.protobuf.Any in requests and answers): every
// file of its services and, transitively, every file they import.
import { createRegistry, type DescFile, type DescService, type Registry } from "@bufbuild/protobuf";

export function typeRegistryOf(services: readonly DescService[]): Registry {
  const files = new Set<DescFile>();
  const visit = (file: DescFile): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const dependency of file.dependencies) visit(dependency);
  };
  for (const service of services) visit(service.file);
  return createRegistry(...files);
}
