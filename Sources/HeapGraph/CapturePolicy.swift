// CapturePolicy.swift — when the watcher may capture beyond its trigger
// (hg_policy_options: repeated firing, per-version budget, one per session,
// sampling of installs, battery) and what it writes about the device and
// app into each snapshot (hg_device_info, hg_device_state); include/heapgraph.h
// section 12. Used through WatchPolicy (Watching.swift).
import CHeapGraph
import Foundation

extension HeapGraph {
    /// Defaults after KOOM / LeakCanary.
    public struct CapturePolicy {
        /// The trigger must fire this many times within `window`.
        public var fires: UInt32 = 3
        public var window: TimeInterval = 60
        /// Captures per app version per period (state in the spool).
        public var maxPerVersion: UInt32 = 5
        public var periodDays: UInt32 = 15
        /// At most one capture per process.
        public var oncePerSession = true
        /// Installs that capture at all, in thousandths, by a stable choice
        /// from the spool's install id.
        public var samplePermille: UInt32 = 1000
        /// No capture below this battery level while not charging (where
        /// the level is known: `deviceState`).
        public var minBatteryPercent: UInt32 = 20
        public init() {}

        var options: hg_policy_options {
            var o = hg_policy_options()
            hg_policy_options_init(&o)
            o.fires = fires
            o.window_ms = UInt32(clamping: Int64(window * 1000))
            o.max_per_version = maxPerVersion
            o.period_days = periodDays
            o.once_per_session = oncePerSession ? 1 : 0
            o.sample_permille = samplePermille
            o.min_battery_percent = minBatteryPercent
            return o
        }
    }

    /// Written into each watcher snapshot as "app.*" / "device.*" keys;
    /// nil fields are left out (the OS version and model are detected).
    public struct DeviceInfo {
        public var app: String?
        /// Also the capture policy's per-version key.
        public var appVersion: String?
        public var build: String?
        public var osVersion: String?
        public var deviceModel: String?
        public init(app: String? = nil, appVersion: String? = nil, build: String? = nil,
                    osVersion: String? = nil, deviceModel: String? = nil) {
            self.app = app
            self.appVersion = appVersion
            self.build = build
            self.osVersion = osVersion
            self.deviceModel = deviceModel
        }

        /// From the main bundle: CFBundleName, CFBundleShortVersionString,
        /// CFBundleVersion.
        public static func fromMainBundle() -> DeviceInfo {
            let i = Bundle.main.infoDictionary ?? [:]
            return DeviceInfo(app: i["CFBundleName"] as? String,
                              appVersion: i["CFBundleShortVersionString"] as? String,
                              build: i["CFBundleVersion"] as? String)
        }
    }

    /// What only the app knows (iOS: UIApplication state, UIDevice
    /// battery), read by the watcher at its next sample; nil = unknown. Any
    /// thread.
    public static func deviceState(foreground: Bool?, batteryPercent: Int?, charging: Bool) {
        hg_device_state(foreground.map { $0 ? 1 : 0 } ?? -1,
                        batteryPercent.map { Int32(clamping: min(max($0, 0), 100)) } ?? -1,
                        charging ? 1 : 0)
    }
}

/// C copies of a DeviceInfo and a CapturePolicy for the watcher, which
/// reads them for as long as it runs (hg_watch_start copies neither).
final class WatchCOptions {
    let device: UnsafeMutablePointer<hg_device_info>?
    let policy: UnsafeMutablePointer<hg_policy_options>?
    private var strings: [UnsafeMutablePointer<CChar>] = []

    init(device d: HeapGraph.DeviceInfo?, policy p: HeapGraph.CapturePolicy?) {
        policy = p.map { p in
            let o = UnsafeMutablePointer<hg_policy_options>.allocate(capacity: 1)
            o.initialize(to: p.options)
            return o
        }
        guard let d = d else { device = nil; return }
        let o = UnsafeMutablePointer<hg_device_info>.allocate(capacity: 1)
        o.initialize(to: hg_device_info())
        o.pointee.version = HG_DEVICE_INFO_VERSION
        device = o
        o.pointee.app = keep(d.app)
        o.pointee.app_version = keep(d.appVersion)
        o.pointee.build = keep(d.build)
        o.pointee.os_version = keep(d.osVersion)
        o.pointee.device_model = keep(d.deviceModel)
    }

    private func keep(_ s: String?) -> UnsafePointer<CChar>? {
        guard let s = s, let c = strdup(s) else { return nil }
        strings.append(c)
        return UnsafePointer(c)
    }

    deinit {
        strings.forEach { free($0) }
        device?.deallocate()
        policy?.deallocate()
    }
}
