// bench_swift.swift — `make bench`'s Swift heap (bench-swift, run in the
// trixie+swiftlang root): 1 M objects of three classes (a generic one
// among them) with strong and weak references between them, then the C
// side (bench_swift_shim.c) times captures with and without the Swift
// classifier.
@_silgen_name("bench_swift_run")
func benchSwiftRun(_ path: UnsafePointer<CChar>, _ objects: Int) -> Int32

final class Item {
  var next: Item?
  weak var peer: Item?
  var value = 0
}
final class Holder<T> {
  var item: T
  init(_ t: T) { item = t }
}
class Base { var tag = 1 }
final class Leaf: Base { var owner: Item? }

#if canImport(Glibc)
import Glibc
#endif

func bench() {
  let total = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2])! : 1_000_000
  var items: [Item] = []
  var holders: [Holder<Item>] = []
  var leaves: [Leaf] = []
  items.reserveCapacity(total / 2)
  for i in 0..<(total / 2) {
    let it = Item()
    it.value = i
    if let last = items.last { last.next = it; if i % 8 == 0 { it.peer = last } }
    items.append(it)
  }
  for i in 0..<(total / 4) { holders.append(Holder(items[i])) }
  for i in 0..<(total - total / 2 - total / 4) { let l = Leaf(); l.owner = items[i]; leaves.append(l) }
  let path = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "/tmp/bench-swift.hgsnap"
  _ = benchSwiftRun(path, total)
  withExtendedLifetime((items, holders, leaves)) {}
}

// HG_BENCH_SWIFT_THREAD=1: the objects are made (and captured) on a second
// thread, i.e. in a glibc thread arena (mmapped heaps): under valgrind,
// whose client brk stops at 8 MiB, the main arena would not be one heap.
if let t = getenv("HG_BENCH_SWIFT_THREAD"), String(cString: t) == "1" {
  var tid = pthread_t()
  pthread_create(&tid, nil, { _ in bench(); return nil }, nil)
  pthread_join(tid, nil)
} else {
  bench()
}
