// Spool.swift — HeapGraph.Spool: the directory that holds finished snapshots
// until they are uploaded (hg_spool_*, include/heapgraph.h section 12): byte,
// file-count and free-disk budgets, gzip after the capture, an install id,
// state that survives the app being killed. The watcher captures into it
// (WatchPolicy.spool); the upload hand-off is in Upload.swift.
import CHeapGraph
import Foundation

extension HeapGraph {
    public final class Spool: @unchecked Sendable {
        /// The spool's budgets (oldest files are dropped first; the count
        /// goes into the next snapshot's metadata) and the upload backoff.
        public struct Limits {
            public var maxFiles: UInt32 = 8
            public var maxBytes: UInt64 = 64 << 20
            /// Below this much free disk no capture is taken and spooled
            /// files are dropped.
            public var minFreeBytes: UInt64 = 200_000_000
            /// gzip each capture once the app runs again (level 1).
            public var compress = true
            public var compressionLevel: UInt32 = 1
            /// First retry delay after a failed upload, doubled per try up
            /// to an hour, with jitter.
            public var retryBackoff: TimeInterval = 30
            /// Tries without a settling answer before a file is dropped.
            public var maxTries: UInt32 = 10
            public init() {}
        }

        public struct Stats: Equatable {
            public var files: Int
            public var bytes: UInt64
            /// Dropped since the last snapshot took the count.
            public var dropped: UInt64
            public var droppedTotal: UInt64
        }

        let handle: OpaquePointer

        /// Opens (creating it if missing, one level, mode 0700) the spool at
        /// `directory`; removes temporaries of writers that are gone and
        /// trims to the limits. Throws `.noDirectory` when the parent is
        /// missing, `.io`, `.invalidArgument`.
        public init(directory: URL, limits: Limits = Limits()) throws {
            var l = hg_spool_limits()
            hg_spool_limits_init(&l)
            l.max_files = limits.maxFiles
            l.max_bytes = limits.maxBytes
            l.min_free_bytes = limits.minFreeBytes
            l.compress = limits.compress ? 1 : 0
            l.level = limits.compressionLevel
            l.backoff_ms = UInt32(clamping: Int64(limits.retryBackoff * 1000))
            l.max_tries = limits.maxTries
            var s: OpaquePointer?
            let rc = directory.withUnsafeFileSystemRepresentation { hg_spool_open($0, &l, &s) }
            try HeapGraphError.check(rc)
            guard let h = s else { throw HeapGraphError.internalError }
            handle = h
        }

        deinit { hg_spool_close(handle) }

        public var directory: URL { URL(fileURLWithPath: String(cString: hg_spool_dir(handle)), isDirectory: true) }

        /// 32 random hex digits made on the first open and kept in the
        /// spool (never a hardware id).
        public var installID: String { String(cString: hg_spool_install_id(handle)) }

        /// Queues a finished snapshot that lies in the spool's directory
        /// (compressed when the limits say so, then trimmed).
        public func add(_ file: URL) throws {
            try HeapGraphError.check(file.withUnsafeFileSystemRepresentation { hg_spool_add(handle, $0) })
        }

        /// Drops the oldest files while over a budget; returns how many.
        @discardableResult
        public func trim() -> Int { max(Int(hg_spool_trim(handle)), 0) }

        public func stats() throws -> Stats {
            var st = hg_spool_stats()
            try HeapGraphError.check(hg_spool_stats(handle, &st))
            return Stats(files: Int(st.files), bytes: st.bytes, dropped: st.dropped, droppedTotal: st.dropped_total)
        }
    }
}

/// A fixed-size C char array (a Swift tuple) as a String, up to its NUL.
func cString<T>(_ tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
}
