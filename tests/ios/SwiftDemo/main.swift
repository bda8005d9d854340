// main.swift — heapgraph-swift-demo: a Swift program that uses the package's
// Swift API the way an app does (objects on the heap, HeapGraph.capture,
// HeapGraph.summary, the watcher through a WatchPolicy) and prints one line
// per step. tests/ios/HeapGraphTests runs it as a child process: on Linux a
// capture parks every thread with a signal, and the XCTest process's
// libdispatch workers block all signals, so an in-process capture there
// times out (HG_ETIMEOUT) — the same would hold for any Linux Swift program
// running dispatch workers.
import Foundation
import HeapGraph

final class Node {
    var next: Node?
    var payload = [UInt8](repeating: 7, count: 100)
    init(_ next: Node?) { self.next = next }
}

func fail(_ what: String) -> Never {
    print("FAIL \(what)")
    exit(1)
}

let args = CommandLine.arguments
guard args.count == 2 else { fail("usage: heapgraph-swift-demo DIR") }
let dir = URL(fileURLWithPath: args[1], isDirectory: true)

var list: Node? = nil
for _ in 0..<2000 { list = Node(list) }

do {
    let file = try HeapGraph.capture(to: dir.appendingPathComponent("capture.hgsnap"), trigger: "swift-demo")
    let s = try HeapGraph.summary(of: file)
    print("capture \(file.lastPathComponent) nodes=\(s.nodes) edges=\(s.edges) roots=\(s.roots) threads=\(s.threads) bytes=\(s.fileBytes) checksum_ok=\(s.checksumOK)")

    let named = try HeapGraph.capture(to: dir)
    print("named \(named.lastPathComponent) checksum_ok=\(try HeapGraph.summary(of: named).checksumOK)")

    let sem = DispatchSemaphore(value: 0)
    var got = "none"
    var policy = HeapGraph.WatchPolicy(directory: dir.appendingPathComponent("watch"))
    policy.minimumInterval = 0
    policy.pollInterval = 0.05
    policy.onSystemPressure = false
    policy.onCapture = { result, trigger in
        switch result {
        case .success(let url):
            let ok = (try? HeapGraph.summary(of: url).checksumOK) ?? false
            got = "trigger=\(trigger) file=\(url.lastPathComponent.hasPrefix("heapgraph-")) checksum_ok=\(ok)"
        case .failure(let e):
            got = "trigger=\(trigger) error=\(e)"
        }
        sem.signal()
    }
    try HeapGraph.startWatching(policy)
    var second = "none"
    do { try HeapGraph.startWatching(policy) } catch { second = "\(error as? HeapGraphError == .busy ? "busy" : "\(error)")" }
    let asked = HeapGraph.memoryWarning()
    if sem.wait(timeout: .now() + 60) == .timedOut { fail("no watcher callback") }
    let n = HeapGraph.stopWatching()
    print("watch asked=\(asked) second_start=\(second) \(got) stopped_after=\(n) after_stop=\(HeapGraph.memoryWarning())")
} catch {
    fail("\(error)")
}
withExtendedLifetime(list) {}
