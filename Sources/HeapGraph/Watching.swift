// Watching.swift — HeapGraph.startWatching: the library's memory-pressure
// watcher (capture/watch.c, include/heapgraph.h section 9) with a Swift
// policy, plus UIKit's memory warning fed to it. The watcher's own thread
// samples the footprint (Darwin phys_footprint), listens to the dispatch
// memory-pressure source, checks os_proc_available_memory against
// `availableMemoryThreshold`, and captures on its thread — never the caller's.
// With a spool (Spool.swift) the files go into it, under the capture policy
// and with the device metadata (CapturePolicy.swift).
import CHeapGraph
import Foundation
#if canImport(UIKit)
import UIKit
#endif

extension HeapGraph {
    /// Why the watcher captured.
    public enum Trigger: Equatable {
        case footprint          // footprint >= footprintThreshold
        case pressure           // the system's memory-pressure source (Linux: PSI)
        case memoryWarning      // UIApplication.didReceiveMemoryWarningNotification / memoryWarning()
        case availableMemory    // os_proc_available_memory() < availableMemoryThreshold
        case other(UInt32)

        init(_ raw: UInt32) {
            switch raw {
            case UInt32(HG_WATCH_FOOTPRINT.rawValue): self = .footprint
            case UInt32(HG_WATCH_PRESSURE.rawValue): self = .pressure
            case UInt32(HG_WATCH_WARNING.rawValue): self = .memoryWarning
            case UInt32(HG_WATCH_LIMIT.rawValue): self = .availableMemory
            default: self = .other(raw)
            }
        }
    }

    /// When the watcher captures, and where the files go.
    public struct WatchPolicy {
        /// Where snapshots are written (created if missing) when there is
        /// no spool. Caches is right: the files are re-creatable
        /// diagnostics, excluded from backups.
        public var directory: URL
        /// Capture into this spool instead (its directory; gzip, budgets
        /// and free-disk guard apply, the upload hand-off takes them from
        /// there). The watcher keeps it open while it runs.
        public var spool: Spool?
        /// Beyond the trigger and `minimumInterval`: the capture policy
        /// (its counters live in the spool's directory). nil: none.
        public var capturePolicy: CapturePolicy?
        /// Written into each snapshot (nil: only what is detected).
        public var device: DeviceInfo?
        /// Capture when the app's footprint reaches this many bytes (nil: off).
        public var footprintThreshold: UInt64?
        /// Capture when fewer than this many bytes remain before the app's
        /// memory limit (iOS 13+: os_proc_available_memory; nil: off).
        public var availableMemoryThreshold: UInt64?
        /// Capture on the system's memory-pressure source (warning, critical).
        public var onSystemPressure = true
        /// Capture on UIApplication.didReceiveMemoryWarningNotification
        /// (where UIKit exists; elsewhere call `memoryWarning()`).
        public var onMemoryWarning = true
        /// Never two captures closer than this (also after a failed one).
        public var minimumInterval: TimeInterval = 600
        /// Captures per process (0: no limit).
        public var maxCaptures: UInt32 = 1
        /// How often the footprint is sampled.
        public var pollInterval: TimeInterval = 1
        /// File names: PREFIX-PID-UNIXMS-SEQ.hgsnap.
        public var filePrefix = "heapgraph"
        /// Called on the watcher's thread after each attempt: the file, or
        /// the error (no file then). Queue the file for upload here; do not
        /// upload from this thread.
        public var onCapture: ((Result<URL, HeapGraphError>, Trigger) -> Void)?

        public init(directory: URL) { self.directory = directory }

        /// Captures into `spool`, with the default capture policy and the
        /// main bundle's name and versions.
        public init(spool: Spool) {
            directory = spool.directory
            self.spool = spool
            capturePolicy = CapturePolicy()
            device = .fromMainBundle()
        }

        /// Library/Caches/heapgraph.
        public static func cachesDirectory() -> URL {
            FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
                .appendingPathComponent("heapgraph", isDirectory: true)
        }
    }

    /// Starts the watcher (one per process). Throws `.busy` when it already runs.
    public static func startWatching(_ policy: WatchPolicy) throws {
        if policy.spool == nil {
            try FileManager.default.createDirectory(at: policy.directory, withIntermediateDirectories: true)
        }
        let box = WatchBox(policy)
        let user = Unmanaged.passRetained(box).toOpaque()
        var o = hg_watch_options()
        hg_watch_options_init(&o)
        o.footprint_threshold = policy.footprintThreshold ?? 0
        o.available_threshold = policy.availableMemoryThreshold ?? 0
        o.on_pressure = policy.onSystemPressure ? 1 : 0
        o.min_interval_ms = UInt32(clamping: Int64(policy.minimumInterval * 1000))
        o.poll_interval_ms = UInt32(clamping: max(Int64(policy.pollInterval * 1000), 1))
        o.max_captures = policy.maxCaptures
        o.user = user
        o.spool = policy.spool?.handle
        o.policy = UnsafePointer(box.c.policy)
        o.device = UnsafePointer(box.c.device)
        o.callback = { path, result, trigger, user in
            guard let user = user else { return }
            let box = Unmanaged<WatchBox>.fromOpaque(user).takeUnretainedValue()
            let outcome: Result<URL, HeapGraphError>
            if let e = HeapGraphError(code: result) {
                outcome = .failure(e)
            } else {
                outcome = .success(URL(fileURLWithPath: path.map { String(cString: $0) } ?? ""))
            }
            box.onCapture?(outcome, Trigger(trigger))
        }
        // dir and prefix are copied by hg_watch_start
        let rc: Int32 = policy.directory.withUnsafeFileSystemRepresentation { dir in
            policy.filePrefix.withCString { prefix in
                o.dir = dir
                o.prefix = prefix
                return hg_watch_start(&o)
            }
        }
        if let e = HeapGraphError(code: rc) {
            Unmanaged<WatchBox>.fromOpaque(user).release()
            throw e
        }
        WatchBox.lock.lock()
        WatchBox.current = user
        WatchBox.lock.unlock()
        #if canImport(UIKit) && !os(watchOS)
        if policy.onMemoryWarning {
            box.observer = NotificationCenter.default.addObserver(
                forName: UIApplication.didReceiveMemoryWarningNotification, object: nil, queue: nil
            ) { _ in HeapGraph.memoryWarning() }
        }
        #endif
    }

    /// Stops the watcher and waits for a capture in progress. Returns the
    /// number of captures it attempted (0 when none was running).
    @discardableResult
    public static func stopWatching() -> Int {
        let rc = hg_watch_stop()
        WatchBox.lock.lock()
        let user = WatchBox.current
        WatchBox.current = nil
        WatchBox.lock.unlock()
        if let user = user {
            let box = Unmanaged<WatchBox>.fromOpaque(user).takeRetainedValue()
            if let o = box.observer { NotificationCenter.default.removeObserver(o) }
        }
        return rc < 0 ? 0 : Int(rc)
    }

    /// Asks the watcher for a capture now (trigger "memory-warning"), subject
    /// to the policy's interval; returns at once. False when no watcher runs.
    @discardableResult
    public static func memoryWarning() -> Bool {
        hg_watch_memory_warning() == 0
    }
}

/// What the C callback reaches through its `user` pointer, and what the
/// watcher reads while it runs (the spool, the C policy and device info):
/// retained until stopWatching has joined the watcher.
final class WatchBox: @unchecked Sendable {
    static let lock = NSLock()
    nonisolated(unsafe) static var current: UnsafeMutableRawPointer?
    let onCapture: ((Result<URL, HeapGraphError>, HeapGraph.Trigger) -> Void)?
    let spool: HeapGraph.Spool?
    let c: WatchCOptions
    var observer: NSObjectProtocol?
    init(_ p: HeapGraph.WatchPolicy) {
        onCapture = p.onCapture
        spool = p.spool
        c = WatchCOptions(device: p.device, policy: p.capturePolicy)
    }
}
