// RUN: %opt %s --split-input-file -p launch-with-openmp | filecheck %s

// The launcher packs (begin, end, captured...) into a stack struct and runs the thread
// function on every OpenMP thread; each thread runs its share of [begin, end).
// CHECK-LABEL: llvm.func @body__launch_thread
// CHECK-SAME:    (%[[CONTEXT:.*]]: !llvm.ptr)
// CHECK:         %[[PACKED:.*]] = llvm.load %[[CONTEXT]] : !llvm.ptr -> !llvm.struct<(i64, i64, ptr, f32)>
// CHECK-DAG:     %[[BEGIN:.*]] = llvm.extractvalue %[[PACKED]][0]
// CHECK-DAG:     %[[END:.*]] = llvm.extractvalue %[[PACKED]][1]
// CHECK-DAG:     %[[BUFFER:.*]] = llvm.extractvalue %[[PACKED]][2]
// CHECK-DAG:     %[[SCALE:.*]] = llvm.extractvalue %[[PACKED]][3]
// CHECK:         %[[THREAD:.*]] = llvm.call @omp_get_thread_num()
// CHECK:         %[[THREADS:.*]] = llvm.call @omp_get_num_threads()
// CHECK:         %[[MY_BEGIN:.*]] = llvm.add %[[BEGIN]], %{{.*}}
// CHECK:         %[[MY_END:.*]] = llvm.select %{{.*}}, %{{.*}}, %[[END]]
// CHECK:         llvm.call @body(%[[MY_BEGIN]], %[[MY_END]], %[[BUFFER]], %[[SCALE]])
// CHECK-LABEL: llvm.func @body__launch
// CHECK-SAME:    (%[[B:.*]]: i64, %[[E:.*]]: i64, %[[P:.*]]: !llvm.ptr, %[[S:.*]]: f32)
// CHECK:         %[[SLOT:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(i64, i64, ptr, f32)>
// CHECK:         llvm.insertvalue %[[B]]
// CHECK:         llvm.store %{{.*}}, %[[SLOT]]
// CHECK:         %[[THREAD_BODY:.*]] = llvm.mlir.addressof @body__launch_thread
// CHECK:         llvm.call @GOMP_parallel(%[[THREAD_BODY]], %[[SLOT]], %{{.*}}, %{{.*}})
// CHECK-DAG:   llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CHECK-DAG:   llvm.func @omp_get_thread_num() -> i32
// The body's recorded distinct buffer becomes a noalias argument.
// CHECK:       llvm.func @body(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: f32)
// CHECK-NOT:     tessel.noalias_pointers
// CHECK-NOT:   tessel.parallel_body
module {
  llvm.func @body(%begin: i64, %end: i64, %buffer: !llvm.ptr, %scale: f32) attributes {tessel.noalias_pointers = array<i64: 2>} {
    llvm.return
  }
  llvm.func @body__launch(i64, i64, !llvm.ptr, f32) attributes {tessel.parallel_body = @body}
  llvm.func @caller(%buffer: !llvm.ptr, %scale: f32) {
    %0 = llvm.mlir.constant(0 : i64) : i64
    %1 = llvm.mlir.constant(64 : i64) : i64
    llvm.call @body__launch(%0, %1, %buffer, %scale) : (i64, i64, !llvm.ptr, f32) -> ()
    llvm.return
  }
}

// -----

// Without launchers the module is unchanged: no OpenMP declarations appear.
// CHECK-LABEL: llvm.func @negative_no_launcher
// CHECK-NOT:   GOMP_parallel
module {
  llvm.func @negative_no_launcher() {
    llvm.return
  }
}
