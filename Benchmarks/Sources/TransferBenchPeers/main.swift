// TransferBenchPeers: the peers' clients of TransferBench — Foundation's URLSession and AsyncHTTPClient —
// in a binary of their own. `TransferBench --client urlsession|ahc|ahc-async …` replaces itself with this program,
// given the same arguments (TransferBench/main.swift has the command line and the output).
import Foundation
import TransferBenchKit

let options = Options.parse()
guard options.idleSeconds == nil, ["urlsession", "ahc", "ahc-async"].contains(options.client) else { usage() }
if options.client == "urlsession" && options.caFile != nil {
    FileHandle.standardError.write(
        Data("URLSession on Linux cannot be told to trust another authority: --cacert is for the other clients\n".utf8))
    exit(2)
}

if options.client == "ahc-async" && options.mode != nil {
    FileHandle.standardError.write(Data("ahc-async runs the 1 KiB rows only; the large rows are `ahc`'s\n".utf8))
    exit(2)
}

if options.client == "urlsession" && options.mode == .stream {
    FileHandle.standardError.write(
        Data("URLSession on Linux has no streamed body (bytes(for:)): no stream mode\n".utf8))
    exit(2)
}

runClient {
    if let mode = options.mode {
        let outcome =
            options.client == "ahc"
            ? runAHCLarge(
                url: options.url, mode: mode, destination: options.destination, expectedBytes: options.expectedBytes)
            : runURLSessionLarge(
                url: options.url, mode: mode, destination: options.destination, expectedBytes: options.expectedBytes)
        report(outcome, mode: mode, options: options)
    }
    let outcome =
        switch options.client {
        case "ahc":
            runAHC(
                url: options.url, concurrency: options.concurrency, requests: options.requests,
                expectedBytes: options.expectedBytes, caFile: options.caFile, httpVersion: options.httpVersion)
        case "ahc-async":
            runAHCAsync(
                url: options.url, concurrency: options.concurrency, requests: options.requests,
                expectedBytes: options.expectedBytes, caFile: options.caFile, httpVersion: options.httpVersion)
        default:
            runURLSession(
                url: options.url, concurrency: options.concurrency, requests: options.requests,
                expectedBytes: options.expectedBytes)
        }
    report(outcome, options: options)
}
