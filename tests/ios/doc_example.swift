// doc_example.swift — the app code of docs/integration-ios.md (sections 2 and 3),
// type-checked for iOS with Sources/HeapGraph by tests/ios/swift_ios_typecheck.sh
// (in the same module, hence no `import HeapGraph`); never built into anything.
import UIKit

func launch() throws {
    let spool = try HeapGraph.Spool(directory: HeapGraph.WatchPolicy.cachesDirectory())
    var policy = HeapGraph.WatchPolicy(spool: spool) // capture policy defaults, the bundle's name/versions
    policy.availableMemoryThreshold = 150 << 20      // < 150 MB left before the jetsam limit
    policy.footprintThreshold = 1_200 << 20          // or: phys_footprint reaches 1.2 GB
    policy.minimumInterval = 600                     // at most one per 10 minutes
    try HeapGraph.startWatching(policy)
    HeapGraphUploader.shared.start(spool)            // 3. Upload
    HeapGraph.deviceState(foreground: UIApplication.shared.applicationState == .active,
                          batteryPercent: Int(UIDevice.current.batteryLevel * 100),
                          charging: UIDevice.current.batteryState == .charging)
    let dir = HeapGraph.WatchPolicy.cachesDirectory()
    let url = try HeapGraph.capture(to: dir, trigger: "manual")
    let s = try HeapGraph.summary(of: url)
    _ = (s.nodes, s.checksumOK, s.trigger, s.app["app.version"])
    try HeapGraph.startRecordingAllocationStacks()
    HeapGraph.stopRecordingAllocationStacks()
}

final class HeapGraphUploader: NSObject, URLSessionTaskDelegate {
    static let shared = HeapGraphUploader()
    let endpoint = URL(string: "https://heapgraph.example.com/v1/snapshots")!
    let apiKey = "…"
    private var spool: HeapGraph.Spool?
    private lazy var session: URLSession = {
        let c = URLSessionConfiguration.background(withIdentifier: "com.example.heapgraph")
        c.isDiscretionary = true                  // the system picks Wi-Fi / power
        c.sessionSendsLaunchEvents = true
        return URLSession(configuration: c, delegate: self, delegateQueue: nil)
    }()

    /// At launch (after startWatching) and on didEnterBackground.
    func start(_ spool: HeapGraph.Spool) {
        self.spool = spool
        sendNext()
    }

    func sendNext() {
        session.getAllTasks { tasks in
            guard tasks.isEmpty, let spool = self.spool,          // one at a time
                  case .upload(let u)? = try? spool.nextUpload() else { return } // empty / backing off
            let task = self.session.uploadTask(with: u.request(to: self.endpoint, apiKey: self.apiKey),
                                               fromFile: u.fileURL)  // background sessions: files only
            task.taskDescription = u.name                             // survives a relaunch
            task.resume()
        }
    }

    func urlSession(_ s: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let name = task.taskDescription, let spool = spool else { return }
        // status and Retry-After from the response; no response = no answer
        let outcome = try? spool.report(name: name, response: error == nil ? task.response : nil)
        if outcome == .sent || outcome == .duplicate || outcome == .dropped { sendNext() }
    }
}
