import Foundation

// An assignment's document, written without `Codable` (`JSONWritable`) inside a served `prompt next`.

extension ExperimentAssignment: JSONWritable {
    /// Writes the assignment as an offer and an explanation hold it.
    package func write(to writer: inout JSONWriter) throws {
        var object = writer.openObject()
        writer.member("assigned_at", in: &object)
        writer.write(assignedAt) { $0.write($1) }
        writer.member("bucket", in: &object)
        writer.write(bucket)
        writer.member("experiment", in: &object)
        writer.write(experiment)
        writer.member("new", in: &object)
        writer.write(isNew)
        writer.member("variant", in: &object)
        writer.write(variant) { $0.write($1) }
        writer.close(object)
    }
}
