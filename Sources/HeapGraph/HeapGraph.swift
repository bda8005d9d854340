// HeapGraph.swift — the Swift face of heapgraph's capture (hg_capture) and of
// reading a snapshot back (hg_graph_load). The watcher is in Watching.swift,
// allocation stacks in AllocationStacks.swift.
import CHeapGraph
import Foundation

public enum HeapGraph {
    /// Captures a snapshot of this process's heap.
    ///
    /// - Parameters:
    ///   - url: a file URL: the snapshot's path, or an existing directory,
    ///     in which the file is named `heapgraph-PID-UNIXMS.hgsnap`.
    ///   - trigger: stored in the snapshot's metadata ("manual" by default).
    /// - Returns: the file written (atomically: temp file, fsync, rename).
    /// - Throws: `HeapGraphError`; `.unsupported` when the allocator was not
    ///   understood (a file without heap nodes was still written at the
    ///   returned path's place), `.busy` when allocator locks stayed held
    ///   (no file), `.noDirectory` when the directory does not exist.
    ///
    /// Every other thread of the app is paused while the heap is walked:
    /// call it from a background thread, never the main thread during a
    /// memory warning (use `startWatching`, which captures on its own thread).
    @discardableResult
    public static func capture(to url: URL, trigger: String = "manual") throws -> URL {
        let file = Self.fileURL(for: url)
        let rc: Int32 = file.withUnsafeFileSystemRepresentation { path in
            trigger.withCString { trig in
                var o = hg_options()
                hg_options_init(&o)
                o.trigger = trig
                return hg_capture(path, &o)
            }
        }
        try HeapGraphError.check(rc)
        return file
    }

    static func fileURL(for url: URL) -> URL {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir), isDir.boolValue else {
            return url
        }
        let ms = UInt64(Date().timeIntervalSince1970 * 1000)
        return url.appendingPathComponent("heapgraph-\(ProcessInfo.processInfo.processIdentifier)-\(ms).hgsnap")
    }

    /// What a snapshot holds, read back and fully validated (hg_graph_load:
    /// every record bounds-checked, the trailer's XXH64 compared).
    public struct SnapshotSummary: Equatable {
        public var nodes: UInt32
        public var edges: UInt32
        public var roots: UInt32
        public var threads: UInt32
        public var regions: UInt32
        public var fileBytes: UInt64
        public var checksumOK: Bool
        /// Why it was taken ("manual", "memory-warning", …).
        public var trigger: String = ""
        /// The app key/values, with the watcher's "app.*" / "device.*" ones.
        public var app: [String: String] = [:]
        /// The allocation-stack recorder's status ("ok", "stopped",
        /// "budget-exhausted"); nil without stacks.
        public var stackStatus: String?
    }

    /// A snapshot that fails to load throws the loader's error; `message`
    /// names the byte offset.
    public struct LoadError: Error, CustomStringConvertible {
        public var error: HeapGraphError
        public var offset: UInt64
        public var message: String
        public var description: String { "\(message) (at byte \(offset))" }
    }

    /// Loads the snapshot at `url` and summarises it (on a backend, or to
    /// check a file before uploading it).
    public static func summary(of url: URL) throws -> SnapshotSummary {
        var err = hg_load_error()
        let g = url.withUnsafeFileSystemRepresentation { hg_graph_load($0, &err) }
        guard let g = g else {
            throw LoadError(error: HeapGraphError(code: Int32(err.code)) ?? .internalError,
                            offset: err.offset, message: cString(err.message))
        }
        defer { hg_graph_free(g) }
        let s = g.pointee
        var sum = SnapshotSummary(nodes: s.node_count, edges: s.edge_count, roots: s.root_count,
                                  threads: s.thread_count, regions: s.region_count,
                                  fileBytes: s.file_size, checksumOK: s.checksum_ok != 0)
        sum.trigger = s.meta.trigger.map { String(cString: $0) } ?? ""
        for i in 0..<s.meta.app_count {
            let kv = s.meta.app[i]
            if let k = kv.key, let v = kv.value { sum.app[String(cString: k)] = String(cString: v) }
        }
        if s.has_stacks != 0 { sum.stackStatus = s.stack_info.status.map { String(cString: $0) } }
        return sum
    }
}
