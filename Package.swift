// swift-tools-version:5.9
// Package.swift — heapgraph as a Swift package: the C library (target
// CHeapGraph: the portable sources, the platform's backend, our own CBOR and
// XXH64 — no third-party code; system libraries: libSystem/libc and zlib) and the
// Swift API (target HeapGraph, Sources/HeapGraph). docs/integration-ios.md
// explains the five-minute path; tests/ios/swift.sh builds and tests this
// package on Linux in a Debian trixie root with swiftlang.
import PackageDescription

// The backend directory is chosen when the manifest is evaluated, i.e. by the
// host that builds the package: Xcode/SwiftPM on a Mac (for iOS, the
// simulator or macOS) takes capture/darwin/, SwiftPM on Linux takes
// capture/linux/. No portable file has a platform #ifdef for this: whole
// directories are in or out. New files in any listed directory come along.
#if os(Linux)
let otherBackend = ["capture/darwin", "capture/stacks/darwin"]
#else
let otherBackend = ["capture/linux"]
#endif

let package = Package(
    name: "HeapGraph",
    platforms: [.iOS(.v14), .macOS(.v11)],
    products: [
        .library(name: "HeapGraph", targets: ["HeapGraph"]),
    ],
    targets: [
        .target(
            name: "CHeapGraph",
            path: ".",
            // the Linux malloc interposer of the allocation-stack recorder
            // (capture/stacks/linux: libheapgraph_stacks.so only, never an
            // app); the recorder's portable core (capture/stacks) and the
            // Darwin malloc_logger hook (capture/stacks/darwin) come along
            exclude: otherBackend + ["capture/stacks/linux"],
            sources: ["graph", "cxxabi", "machoparse", "capture", "compat"],
            publicHeadersPath: "include",
            cSettings: [
                .headerSearchPath("."),
                .headerSearchPath("compat/include"),
                .define("_GNU_SOURCE", .when(platforms: [.linux])),
            ],
            linkerSettings: [
                // the spool's gzip (device-upload issue) uses the system zlib:
                // libz.tbd in every Apple SDK, zlib1g on Linux
                .linkedLibrary("z"),
                .linkedLibrary("pthread", .when(platforms: [.linux])),
                .linkedLibrary("dl", .when(platforms: [.linux])),
            ]
        ),
        .target(
            name: "HeapGraph",
            dependencies: ["CHeapGraph"],
            path: "Sources/HeapGraph"
        ),
        // tests/ios: a Swift program using the API as an app does, and the
        // tests that run it (not part of any product)
        .executableTarget(
            name: "heapgraph-swift-demo",
            dependencies: ["HeapGraph"],
            path: "tests/ios/SwiftDemo"
        ),
        .testTarget(
            name: "HeapGraphTests",
            dependencies: ["HeapGraph", "heapgraph-swift-demo"],
            path: "tests/ios/HeapGraphTests"
        ),
    ],
    cLanguageStandard: .c11
)
