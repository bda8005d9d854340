// HeapGraphTests.swift — the Swift package's tests (tests/ios/swift.sh runs
// them on Linux, the Linux backend behind the Swift API). The captures run in
// a child process, heapgraph-swift-demo (tests/ios/SwiftDemo): the XCTest
// process has threads that block the parking signal, so Linux's
// signal-based thread parking cannot pause them (testInProcessCapture
// records that). Here: the child's capture, read back again in this process,
// the capture into a directory, the watcher (start, second start refused,
// memory warning, callback with the file, stop), error mapping; the spool
// and upload hand-off (the child's watcher captures into spools under a
// capture policy with device info; this process takes the files with
// nextUpload, checks their metadata and headers, reports HTTP outcomes and
// sees each acted on); allocation stacks start/stop without an interposer.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
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
    func runDemo(_ extra: [String] = []) throws -> [String: String] {
        let p = Process()
        p.executableURL = productsDirectory.appendingPathComponent("heapgraph-swift-demo")
        p.arguments = [dir.path] + extra
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

    func testStacksStopWithoutRecording() {
        // hg_stacks_stop's real behaviour is tested in C (tests/stacks/stop.c,
        // with the interposer); here: nothing records, so stop says so
        #if os(Linux)
        XCTAssertFalse(HeapGraph.stopRecordingAllocationStacks())
        XCTAssertFalse(HeapGraph.stopRecordingAllocationStacks())
        #endif
    }

    func header(_ u: HeapGraph.Spool.Upload, _ name: String) -> String? {
        u.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    func testSpoolAndUploadHandOff() throws {
        let out = try runDemo(["spool"])
        XCTAssertEqual(field(out["spool"], "files"), "2")
        let got = field(out["spool"], "got")?.split(separator: ",") ?? []
        XCTAssertEqual(got.count, 2)
        XCTAssertTrue(got.allSatisfy { $0.hasPrefix("memoryWarning:heapgraph-") && $0.hasSuffix(".hgsnap") }, "\(got)")

        let spool = try HeapGraph.Spool(directory: dir.appendingPathComponent("spool"))
        XCTAssertEqual(spool.installID, field(out["spool"], "install"))
        XCTAssertEqual(spool.installID.count, 32)
        XCTAssertEqual(try spool.stats().files, 2)

        // the oldest file, its headers and metadata
        guard case .upload(let u) = try spool.nextUpload() else { return XCTFail("no upload") }
        XCTAssertTrue(u.name.hasSuffix(".hgsnap"))
        XCTAssertEqual(u.checksum.count, 16)
        XCTAssertTrue(u.name.contains(u.checksum))
        let size = try FileManager.default.attributesOfItem(atPath: u.fileURL.path)[.size] as? NSNumber
        XCTAssertEqual(u.bytes, size?.uint64Value)
        XCTAssertEqual(header(u, "Content-Type"), "application/vnd.heapgraph.snapshot")
        XCTAssertEqual(header(u, "X-Heapgraph-Checksum"), u.checksum)
        XCTAssertEqual(header(u, "Idempotency-Key"), u.checksum)
        XCTAssertNil(header(u, "Content-Encoding"))
        let s = try HeapGraph.summary(of: u.fileURL)
        XCTAssertTrue(s.checksumOK)
        XCTAssertGreaterThan(s.nodes, 4000)
        XCTAssertEqual(s.trigger, "memory-warning")
        XCTAssertEqual(s.app["app.name"], "swift-demo")
        XCTAssertEqual(s.app["app.version"], "1.2.3")
        XCTAssertEqual(s.app["app.build"], "42")
        XCTAssertEqual(s.app["device.model"], "TestPhone1,1")
        XCTAssertEqual(s.app["device.install_id"], spool.installID)
        XCTAssertEqual(s.app["device.battery_percent"], "80")
        XCTAssertEqual(s.app["device.state"], "foreground")
        XCTAssertNil(s.stackStatus)
        let r = u.request(to: URL(string: "https://heapgraph.invalid/v1/snapshots")!, apiKey: "k123")
        XCTAssertEqual(r.httpMethod, "POST")
        XCTAssertEqual(r.value(forHTTPHeaderField: "Authorization"), "Bearer k123")
        XCTAssertEqual(r.value(forHTTPHeaderField: "X-Heapgraph-Checksum"), u.checksum)
        let kept = dir.appendingPathComponent("kept.hgsnap")
        try FileManager.default.copyItem(at: u.fileURL, to: kept)

        // 503: kept, backing off; then 201 (reported by name): removed
        XCTAssertEqual(try spool.report(u, httpStatus: 503), .retry)
        XCTAssertTrue(FileManager.default.fileExists(atPath: u.fileURL.path))
        guard case .wait(let t) = try spool.nextUpload() else { return XCTFail("no backoff") }
        XCTAssertTrue(t > 10 && t <= 30, "wait \(t)")
        XCTAssertEqual(try spool.report(name: u.name, httpStatus: 201), .sent)
        XCTAssertFalse(FileManager.default.fileExists(atPath: u.fileURL.path))
        XCTAssertEqual(try spool.stats().files, 1)
        // 413: dropped; then nothing left
        guard case .upload(let u2) = try spool.nextUpload() else { return XCTFail("no second upload") }
        XCTAssertNotEqual(u2.name, u.name)
        XCTAssertEqual(try spool.report(u2, httpStatus: 413), .dropped)
        XCTAssertFalse(FileManager.default.fileExists(atPath: u2.fileURL.path))
        XCTAssertEqual(try spool.stats().files, 0)
        guard case .empty = try spool.nextUpload() else { return XCTFail("not empty") }
        XCTAssertThrowsError(try spool.report(name: "../x.hgsnap", httpStatus: 201)) { e in
            XCTAssertEqual(e as? HeapGraphError, .invalidArgument)
        }

        // the gzip spool, outcomes from URLResponses (Retry-After, none, 200)
        XCTAssertEqual(field(out["spoolgz"], "files"), "1")
        let gz = try HeapGraph.Spool(directory: dir.appendingPathComponent("spoolgz"))
        guard case .upload(let u3) = try gz.nextUpload() else { return XCTFail("no gz upload") }
        XCTAssertTrue(u3.name.hasSuffix(".hgsnap.gz"))
        XCTAssertEqual(header(u3, "Content-Encoding"), "gzip")
        XCTAssertEqual(try Data(contentsOf: u3.fileURL).prefix(2), Data([0x1f, 0x8b]))
        let endpoint = URL(string: "https://heapgraph.invalid/v1/snapshots")!
        let r429 = HTTPURLResponse(url: endpoint, statusCode: 429, httpVersion: nil, headerFields: ["Retry-After": "7"])
        XCTAssertEqual(try gz.report(name: u3.name, response: r429), .retry)
        guard case .wait(let t3) = try gz.nextUpload() else { return XCTFail("no Retry-After wait") }
        XCTAssertTrue(t3 > 5 && t3 <= 7, "wait \(t3)")
        XCTAssertEqual(try gz.report(name: u3.name, response: nil), .retry)
        let r200 = HTTPURLResponse(url: endpoint, statusCode: 200, httpVersion: nil, headerFields: [:])
        XCTAssertEqual(try gz.report(name: u3.name, response: r200), .duplicate)
        XCTAssertEqual(try gz.stats().files, 0)

        // add: a snapshot copied in is tagged with its checksum; over
        // max_files the oldest goes; a file that is no snapshot is refused
        var l = HeapGraph.Spool.Limits()
        l.maxFiles = 1
        l.compress = false
        l.minFreeBytes = 0
        let manual = try HeapGraph.Spool(directory: dir.appendingPathComponent("manual"), limits: l)
        for n in ["a", "b"] {
            let f = manual.directory.appendingPathComponent("\(n).hgsnap")
            try FileManager.default.copyItem(at: kept, to: f)
            try manual.add(f)
            Thread.sleep(forTimeInterval: 0.01)
        }
        let ms = try manual.stats()
        XCTAssertEqual(ms.files, 1)
        XCTAssertEqual(ms.droppedTotal, 1)
        guard case .upload(let u4) = try manual.nextUpload() else { return XCTFail("no manual upload") }
        XCTAssertTrue(u4.name.hasPrefix("b.\(u.checksum)"), u4.name)
        let junk = manual.directory.appendingPathComponent("junk.hgsnap")
        try Data([1, 2, 3]).write(to: junk)
        XCTAssertThrowsError(try manual.add(junk))
        XCTAssertFalse(FileManager.default.fileExists(atPath: junk.path))
        XCTAssertThrowsError(try HeapGraph.Spool(directory: dir.appendingPathComponent("no/such/spool"))) { e in
            XCTAssertEqual(e as? HeapGraphError, .noDirectory)
        }
    }
}
