// main.swift — heapgraph-swift-demo: a Swift program that uses the package's
// Swift API the way an app does (objects on the heap, HeapGraph.capture,
// HeapGraph.summary, the watcher through a WatchPolicy) and prints one line
// per step. `heapgraph-swift-demo DIR spool`: the watcher captures into
// spools instead (HeapGraph.Spool, a CapturePolicy, DeviceInfo,
// deviceState): two memory warnings into DIR/spool (uncompressed), one into
// DIR/spoolgz (gzip); the test process then takes the upload hand-off. tests/ios/HeapGraphTests runs it as a child process: on Linux a
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
guard args.count == 2 || (args.count == 3 && args[2] == "spool") else { fail("usage: heapgraph-swift-demo DIR [spool]") }
let dir = URL(fileURLWithPath: args[1], isDirectory: true)

var list: Node? = nil
for _ in 0..<2000 { list = Node(list) }

/// Starts the watcher on a spool, asks for `warnings` captures (one at a
/// time), stops it; returns the callback's results.
func watchIntoSpool(_ name: String, compress: Bool, warnings: Int) throws -> (HeapGraph.Spool, [String]) {
    var limits = HeapGraph.Spool.Limits()
    limits.compress = compress
    limits.minFreeBytes = 0
    let spool = try HeapGraph.Spool(directory: dir.appendingPathComponent(name), limits: limits)
    var policy = HeapGraph.WatchPolicy(spool: spool)
    var cp = HeapGraph.CapturePolicy()
    cp.fires = 1
    cp.oncePerSession = false
    cp.maxPerVersion = 100
    policy.capturePolicy = cp
    policy.device = HeapGraph.DeviceInfo(app: "swift-demo", appVersion: "1.2.3", build: "42", deviceModel: "TestPhone1,1")
    policy.minimumInterval = 0
    policy.pollInterval = 0.05
    policy.maxCaptures = 0
    policy.onSystemPressure = false
    let sem = DispatchSemaphore(value: 0)
    var got: [String] = []
    policy.onCapture = { result, trigger in
        switch result {
        case .success(let url): got.append("\(trigger):\(url.lastPathComponent)")
        case .failure(let e): got.append("\(trigger):error=\(e)")
        }
        sem.signal()
    }
    HeapGraph.deviceState(foreground: true, batteryPercent: 80, charging: false)
    try HeapGraph.startWatching(policy)
    for _ in 0..<warnings {
        guard HeapGraph.memoryWarning() else { fail("memoryWarning: no watcher") }
        if sem.wait(timeout: .now() + 60) == .timedOut { fail("no watcher callback") }
    }
    HeapGraph.stopWatching()
    return (spool, got)
}

if args.count == 3 {
    do {
        let (s1, got1) = try watchIntoSpool("spool", compress: false, warnings: 2)
        let st = try s1.stats()
        print("spool files=\(st.files) install=\(s1.installID) got=\(got1.joined(separator: ","))")
        let (s2, got2) = try watchIntoSpool("spoolgz", compress: true, warnings: 1)
        print("spoolgz files=\(try s2.stats().files) got=\(got2.joined(separator: ","))")
    } catch {
        fail("\(error)")
    }
    withExtendedLifetime(list) {}
    exit(0)
}

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
