// HeapGraphTests.swift — the Swift package's tests (tests/ios/swift.sh runs
// them on Linux, the Linux backend behind the Swift API). The captures run in
// a child process, heapgraph-swift-demo (tests/ios/SwiftDemo): the XCTest
// process has threads that block the parking signal, so Linux's
// signal-based thread parking cannot pause them (testInProcessCapture
// records that). Here: the child's capture, read back again in this process,
// the capture into a directory, the watcher (start, second start refused,
// memory warning, callback with the file, stop), error mapping.
import Foundation
import XCTest
@testable import HeapGraph

final class HeapGraphTests: XCTestCase {
    var dir: URL!

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("hg-swift-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    var productsDirectory: URL {
        #if os(macOS)
        for b in Bundle.allBundles where b.bundlePath.hasSuffix(".xctest") {
            return b.bundleURL.deletingLastPathComponent()
        }
        fatalError("no .xctest bundle")
        #else
        return Bundle.main.bundleURL
        #endif
    }

    /// Runs heapgraph-swift-demo DIR; returns its output lines by first word.
    func runDemo() throws -> [String: String] {
        let p = Process()
        p.executableURL = productsDirectory.appendingPathComponent("heapgraph-swift-demo")
        p.arguments = [dir.path]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        print(out, terminator: "")
        XCTAssertEqual(p.terminationStatus, 0, out)
        var lines: [String: String] = [:]
        for l in out.split(separator: "\n") {
            let parts = l.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { lines[String(parts[0])] = String(parts[1]) }
        }
        return lines
    }

    func field(_ line: String?, _ key: String) -> String? {
        line?.split(separator: " ").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    func testCaptureAndReadBack() throws {
        let out = try runDemo()
        let cap = out["capture"]
        XCTAssertNotNil(cap)
        XCTAssertEqual(field(cap, "checksum_ok"), "true")
        // 2000 Swift objects, each with an array buffer
        XCTAssertGreaterThan(Int(field(cap, "nodes") ?? "") ?? 0, 4000)
        XCTAssertGreaterThan(Int(field(cap, "edges") ?? "") ?? 0, 4000)
        XCTAssertGreaterThan(Int(field(cap, "roots") ?? "") ?? 0, 0)
        XCTAssertGreaterThan(Int(field(cap, "threads") ?? "") ?? 0, 0)
        // read back here too: the file the child wrote, through the Swift API
        let s = try HeapGraph.summary(of: dir.appendingPathComponent("capture.hgsnap"))
        XCTAssertTrue(s.checksumOK)
        XCTAssertEqual(String(s.nodes), field(cap, "nodes"))
        XCTAssertEqual(String(s.edges), field(cap, "edges"))
        let size = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("capture.hgsnap").path)[.size] as? NSNumber
        XCTAssertEqual(s.fileBytes, size?.uint64Value)

        XCTAssertTrue(out["named"]?.hasPrefix("heapgraph-") ?? false)
        XCTAssertEqual(field(out["named"], "checksum_ok"), "true")

        let w = out["watch"]
        XCTAssertEqual(field(w, "asked"), "true")
        XCTAssertEqual(field(w, "second_start"), "busy")
        XCTAssertEqual(field(w, "trigger"), "memoryWarning")
        XCTAssertEqual(field(w, "file"), "true")
        XCTAssertEqual(field(w, "checksum_ok"), "true")
        XCTAssertEqual(field(w, "stopped_after"), "1")
        XCTAssertEqual(field(w, "after_stop"), "false")
        let watched = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("watch").path)
        XCTAssertEqual(watched.filter { $0.hasSuffix(".hgsnap") }.count, 1)
    }

    func testInProcessCapture() throws {
        // In this XCTest process a capture either works or, where a thread
        // blocks the parking signal, gives up with .timeout and leaves no
        // file — it never hangs. Prints which, with each thread's SigBlk.
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for tid in tasks.sorted() {
            let st = (try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)) ?? ""
            let name = st.split(separator: "\n").first { $0.hasPrefix("Name:") } ?? ""
            let blk = st.split(separator: "\n").first { $0.hasPrefix("SigBlk:") } ?? ""
            print("thread \(tid) \(name.replacingOccurrences(of: "\t", with: " ")) \(blk.replacingOccurrences(of: "\t", with: " "))")
        }
        let file = dir.appendingPathComponent("inproc.hgsnap")
        do {
            try HeapGraph.capture(to: file)
            XCTAssertTrue(try HeapGraph.summary(of: file).checksumOK)
            print("in-process capture: ok")
        } catch let e as HeapGraphError {
            XCTAssertEqual(e, .timeout)
            XCTAssertFalse(FileManager.default.fileExists(atPath: file.path))
            print("in-process capture: \(e) (a thread could not be parked)")
        }
    }

    func testErrors() throws {
        XCTAssertThrowsError(try HeapGraph.capture(to: dir.appendingPathComponent("no/such/dir/x.hgsnap"))) { e in
            XCTAssertEqual(e as? HeapGraphError, .noDirectory)
        }
        let junk = dir.appendingPathComponent("junk.hgsnap")
        try Data([0xd9, 0xd9, 0xf7, 0x9f]).write(to: junk)
        XCTAssertThrowsError(try HeapGraph.summary(of: junk)) { e in
            let le = e as? HeapGraph.LoadError
            XCTAssertNotNil(le)
            XCTAssertEqual(le?.error, .truncated)
            XCTAssertFalse(le?.message.isEmpty ?? true)
        }
        XCTAssertEqual(HeapGraphError(code: -11), .busy)
        XCTAssertEqual(HeapGraphError.busy.code, -11)
        XCTAssertNil(HeapGraphError(code: 0))
        XCTAssertEqual(HeapGraphError(code: -999), .other(-999))
        for c in Int32(-18)...Int32(-1) {
            let e = HeapGraphError(code: c)
            XCTAssertEqual(e?.code, c)
            if case .other = e { XCTFail("code \(c) has no case") }
        }
        XCTAssertTrue(HeapGraphError.noSpace.description.hasPrefix("no space left on device"))
    }

    func testStacksUnsupportedWithoutInterposer() {
        // The package leaves the Linux malloc interposer out (it would replace
        // the app's malloc), so recording is refused there, not faked.
        #if os(Linux)
        XCTAssertThrowsError(try HeapGraph.startRecordingAllocationStacks()) { e in
            XCTAssertEqual(e as? HeapGraphError, .unsupported)
        }
        #endif
    }
}
